#include <csignal>
#include <cstdlib>
#include <gtest/gtest.h>
#include <unistd.h>

#include "sextant/runtime/isolation.h"

using namespace sextant;

TEST(Isolation, ReturnsOutputOfFinishedJob) {
  auto o = runIsolated([] { return std::string("hello"); }, 5);
  EXPECT_TRUE(o.finished());
  EXPECT_EQ(o.output, "hello");
}

TEST(Isolation, CrashIsReportedWithSignal) {
  auto o = runIsolated([]() -> std::string { raise(SIGSEGV); return "unreachable"; }, 5);
  EXPECT_EQ(o.kind, ChildOutcome::Kind::Signaled);
  EXPECT_EQ(o.signal, SIGSEGV);
  EXPECT_EQ(o.describe(), "killed by SIGSEGV");
  EXPECT_TRUE(o.output.empty());
}

TEST(Isolation, HangIsKilledAfterTimeout) {
  auto o = runIsolated([]() -> std::string { while (true) pause(); }, 0.5);
  EXPECT_EQ(o.kind, ChildOutcome::Kind::TimedOut);
  EXPECT_GE(o.seconds, 0.5);
  EXPECT_LT(o.seconds, 5.0);
}

TEST(Isolation, AbortMessageOnStderrIsCaptured) {
  auto o = runIsolated([]() -> std::string {
    fprintf(stderr, "LLVM ERROR: something fatal\n");
    abort();
  }, 5);
  EXPECT_EQ(o.kind, ChildOutcome::Kind::Signaled);
  EXPECT_NE(o.stderr_text.find("LLVM ERROR"), std::string::npos);
}

TEST(Isolation, ParallelJobsKeepTheirOrder) {
  std::vector<IsolatedJob> jobs;
  for (int i = 0; i < 6; ++i)
    jobs.push_back([i] {
      usleep(useconds_t((6 - i) * 20000));
      return std::to_string(i);
    });
  auto out = runIsolated(jobs, 3, 10);
  ASSERT_EQ(out.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i].output, std::to_string(i));
}

// A measuring child binds OpenMP threads to cores unless the environment already places them
// (docs/measurement.md): checked in isolated children, so the test process keeps its environment.
TEST(Isolation, MeasuringChildrenBindOpenMpThreadsUnlessTheEnvironmentPlacesThem) {
  ChildOutcome plain = runIsolated(
      [] {
        for (const char* v : {"OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY", "GOMP_CPU_AFFINITY"}) unsetenv(v);
        bindOpenMpThreads();
        const char* b = getenv("OMP_PROC_BIND");
        return std::string(b ? b : "unset");
      },
      10);
  EXPECT_EQ(plain.output, "true");
  ChildOutcome placed = runIsolated(
      [] {
        unsetenv("OMP_PROC_BIND");
        setenv("OMP_PLACES", "cores", 1);
        bindOpenMpThreads();
        const char* b = getenv("OMP_PROC_BIND");
        return std::string(b ? b : "unset");
      },
      10);
  EXPECT_EQ(placed.output, "unset");
}
