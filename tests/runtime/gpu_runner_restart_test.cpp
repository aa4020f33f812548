// The runner's defences for a first run on a real GPU, on the fake device: C checked again after
// the timed repetitions, a refused cubin replaced by its PTX, a run that stops after a fault and
// is resumed by a fresh process, and the time budget.
#include <filesystem>
#include <gtest/gtest.h>

#include "fake_gpu.h"
#include "temp_dir.h"

using namespace sextant;
using namespace sextant::testing_gpu;

TEST(GpuRunnerDefences, ARaceAfterTheFirstLaunchIsCaughtAfterTheTimedRepetitions) {
  TempDir d{"gpu-test"};
  auto m = fakeBundle(d.str(), {{kernel("racy", kW0), "racy CAB"}, {kernel("fine", kW0), "naive CAB"}});
  FakeDevice dev;
  auto r = runBundle(dev, d.str(), m, fastOptions((d.path / "r.json").string()));
  ASSERT_TRUE(r.ok()) << r.error();
  const KernelResult* racy = find(*r, "racy");
  EXPECT_EQ(racy->status, "wrong_result");
  EXPECT_NE(racy->message.find("right after the first launch, wrong after"), std::string::npos) << racy->message;
  EXPECT_EQ(racy->verified, 2);
  EXPECT_EQ(racy->gflops, 0);
  const KernelResult* fine = find(*r, "fine");
  EXPECT_EQ(fine->status, "ok") << fine->message;
  EXPECT_EQ(fine->verified, 2);
  EXPECT_EQ(fine->loaded, "ptx");
  auto back = readResults((d.path / "r.json").string());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, *r);  // loaded and verified round-trip
}

TEST(GpuRunnerDefences, ARefusedCubinFallsBackToItsPtx) {
  TempDir d{"gpu-test"};
  BundleKernel refused = kernel("refused", kW0), good = kernel("good", kW0);
  for (BundleKernel* k : {&refused, &good}) {
    k->format = KernelFormat::Cubin;
    k->file = "kernels/" + k->id + ".cubin";
    k->ptx_file = "kernels/" + k->id + ".ptx";
  }
  BundleManifest m;
  m.created_by = "test", m.created_at = isoTimeUtc(), m.target = "h100", m.vendor = "nvidia", m.arch = "sm_90";
  m.workloads = {kW0};
  m.kernels = {refused, good};
  ASSERT_TRUE(writeBundle(d.str(), m,
                          {{refused.file, "nocubin CAB " + kW0}, {refused.ptx_file, "naive CAB " + kW0},
                           {good.file, "naive CAB " + kW0}, {good.ptx_file, "garbage"}})
                  .ok());
  auto back = readBundle(d.str());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, m);
  FakeDevice dev;
  auto r = runBundle(dev, d.str(), *back, fastOptions((d.path / "r.json").string()));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(find(*r, "refused")->status, "ok") << find(*r, "refused")->message;
  EXPECT_EQ(find(*r, "refused")->loaded.rfind("ptx (fallback: cannot load the cubin module", 0), 0u)
      << find(*r, "refused")->loaded;
  EXPECT_EQ(find(*r, "good")->status, "ok");
  EXPECT_EQ(find(*r, "good")->loaded, "cubin");
  // A PTX fallback belongs to cubin kernels only, and must exist.
  auto j = toJson(m);
  j["kernels"][0]["format"] = "ptx";
  EXPECT_FALSE(manifestFromJson(j, "m.json").ok());
  std::filesystem::remove(d.path / refused.ptx_file);
  auto missing = readBundle(d.str());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("refused.ptx"), std::string::npos) << missing.error();
}

TEST(GpuRunnerDefences, StopsAfterAFaultAndAFreshProcessResumes) {
  TempDir d{"gpu-test"};
  auto m = fakeBundle(d.str(), {{kernel("a", kW0), "naive CAB"},
                                {kernel("faulty", kW0), "fault CAB"},
                                {kernel("b", kW0), "naive CAB"},
                                {kernel("c", kW1), "naive CAB"}});
  const std::string results = (d.path / "r.json").string();
  RunOptions o = fastOptions(results);
  o.stop_after_fault = true;
  {
    FakeDevice dev;
    auto r = runBundle(dev, d.str(), m, o);
    ASSERT_TRUE(r.ok()) << r.error();
    ASSERT_EQ(r->results.size(), 2u);  // a, faulty; the rest is left to a fresh process
    EXPECT_EQ(find(*r, "faulty")->status, "launch_error");
    EXPECT_EQ(r->references.size(), 1u);
  }
  auto disk = readResults(results);
  ASSERT_TRUE(disk.ok()) << disk.error();
  ASSERT_EQ(disk->results.size(), 2u);
  o.resume_from = *disk;
  FakeDevice fresh;
  auto r = runBundle(fresh, d.str(), m, o);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->results.size(), 4u);
  EXPECT_EQ(fresh.loads, 2);  // b and c only: a and faulty are not measured again
  EXPECT_EQ(find(*r, "faulty")->status, "launch_error");
  for (const char* id : {"a", "b", "c"}) EXPECT_EQ(find(*r, id)->status, "ok") << id;
  EXPECT_EQ(r->references.size(), 2u);  // kW0's kept, kW1's measured now
  EXPECT_EQ(r->date, disk->date);
  EXPECT_NE(r->notes.back().find("resumed"), std::string::npos);
  // Resuming on another device is refused.
  FakeDevice other;
  other.info_.name = "Another GPU";
  auto refused = runBundle(other, d.str(), m, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("Another GPU"), std::string::npos) << refused.error();
}

TEST(GpuRunnerDefences, KernelsNotStartedWithinTheTimeBudgetAreSkipped) {
  TempDir d{"gpu-test"};
  auto m = fakeBundle(d.str(), {{kernel("a", kW0), "naive CAB"}, {kernel("b", kW1), "naive CAB"}});
  RunOptions o = fastOptions((d.path / "r.json").string());
  o.deadline_s = 1;  // long past on the steady clock
  FakeDevice dev;
  auto r = runBundle(dev, d.str(), m, o);
  ASSERT_TRUE(r.ok()) << r.error();
  for (const char* id : {"a", "b"}) {
    EXPECT_EQ(find(*r, id)->status, "skipped");
    EXPECT_EQ(find(*r, id)->message, "time budget spent");
  }
  EXPECT_EQ(dev.launches, 0);
}
