// Running untrusted work (compiling or executing a candidate) where a crash, a hang or an LLVM
// fatal error cannot take the tuner down: each job runs in a forked child with a timeout, and
// sends its result back through a pipe as text.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace sextant {

struct ChildOutcome {
  enum class Kind { Exited, Signaled, TimedOut, ForkFailed, Stopped };
  Kind kind = Kind::ForkFailed;
  int exit_code = -1;
  int signal = 0;
  std::string output;       // what the job returned (empty unless it finished)
  std::string stderr_text;  // what the child printed on stderr (LLVM fatal errors land here)
  double seconds = 0;

  bool finished() const { return kind == Kind::Exited && exit_code == 0; }
  std::string describe() const;  // "killed by SIGSEGV", "timed out after 10.0 s", ...
};

using IsolatedJob = std::function<std::string()>;

// Runs each job in its own forked child, at most `jobs` at once, each with `timeout_s`. Results
// come back in the order of `work`. Children get their own process group (a Ctrl-C at the
// terminal reaches only the tuner) and die with the parent.
std::vector<ChildOutcome> runIsolated(const std::vector<IsolatedJob>& work, int jobs, double timeout_s);
ChildOutcome runIsolated(const IsolatedJob& job, double timeout_s);

// Called inside a job (in the child): caps how much more address space the child may map, as
// RLIMIT_AS = what it has mapped now + extra_bytes. A candidate that allocates past it gets NULL
// from malloc (compiled code checks nothing, so it crashes): one failure record, not the kernel's
// OOM killer picking the tuner or the machine going to swap. extra_bytes <= 0: no limit. Returns
// false (and sets nothing) when the current mapping cannot be read.
bool limitChildAddressSpace(long long extra_bytes);
// Half the physical memory: the default cap on what a measuring child may map.
long long defaultChildMemoryLimit();
// Called in a measuring child before it loads OpenMP code (a kernel, a network, or sextant-libref
// before its exec): OpenMP threads bound to cores (OMP_PROC_BIND=true), unless the environment
// already places them (OMP_PROC_BIND, OMP_PLACES, KMP_AFFINITY, GOMP_CPU_AFFINITY). Left to the
// scheduler, a 2-thread kernel of tens of microseconds measured either ~25 or ~80 us per call,
// per process, depending on whether its two threads shared one vCPU (Zen 5 VM, 2026-11-25).
void bindOpenMpThreads();

// One measuring process per machine at a time (issue #35): a machine-wide lock on a file
// ($SEXTANT_MACHINE_LOCK, default /tmp/sextant-machine.lock). Measuring holds it exclusively
// (measureSharedObject, the reference libraries, the FMA peak); compiling candidates holds it
// shared, so that no Sextant process on the machine measures while another compiles or measures:
// two `tune` runs or two workers on one machine take turns instead of disturbing each other's
// timings. Waiting longer than a few seconds prints one line on stderr. RAII; the lock goes with
// the process if it dies.
class MachineLock {
 public:
  enum class Mode { Measure, Compile };
  explicit MachineLock(Mode mode);
  ~MachineLock();
  MachineLock(const MachineLock&) = delete;
  MachineLock& operator=(const MachineLock&) = delete;
  bool held() const { return fd_ >= 0; }  // false: the lock file could not be opened (not enforced)

 private:
  int fd_ = -1;
};
// The lock file's path.
std::string machineLockPath();

// Kills every child still running (used by signal handlers); safe to call at any time.
void killAllChildren();

// Ctrl-C: from now on runIsolated kills the children it is waiting for and starts no more; their
// outcomes are Kind::Stopped (not failures: the caller records nothing for them). Async-signal
// safe. clearStopRequest() undoes it (tests).
void requestStop();
bool stopRequested();
void clearStopRequest();

}  // namespace sextant
