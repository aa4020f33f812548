#include "sextant/runtime/isolation.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <fstream>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sextant {
namespace {

constexpr size_t kMaxCapture = 1 << 20;
constexpr int kMaxChildren = 64;
std::atomic<pid_t> g_children[kMaxChildren];
std::atomic<bool> g_stop_requested{false};

void track(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pid)) return;
  }
}
void untrack(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void writeAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += size_t(n);
  }
}

struct Running {
  size_t index;
  pid_t pid;
  int out_fd, err_fd;
  std::chrono::steady_clock::time_point start;
  ChildOutcome outcome;
};

bool spawn(const IsolatedJob& job, size_t index, Running& r) {
  int out[2], err[2];
  if (pipe(out) != 0) return false;
  if (pipe(err) != 0) {
    close(out[0]);
    close(out[1]);
    return false;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    return false;
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(99);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    close(out[0]);
    close(err[0]);
    dup2(err[1], 2);
    std::string result;
    try {
      result = job();
    } catch (const std::exception& e) {
      writeAll(2, std::string("uncaught exception: ") + e.what() + "\n");
      _exit(3);
    } catch (...) {
      _exit(3);
    }
    writeAll(out[1], result);
    close(out[1]);
    _exit(0);
  }
  close(out[1]);
  close(err[1]);
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  track(pid);
  r = Running{index, pid, out[0], err[0], std::chrono::steady_clock::now(), {}};
  return true;
}

// Reads what is available; returns false at EOF.
bool drain(int fd, std::string& into) {
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      if (into.size() < kMaxCapture) into.append(buf, size_t(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return true;  // EAGAIN
  }
}

}  // namespace

std::string machineLockPath() {
  const char* p = getenv("SEXTANT_MACHINE_LOCK");
  return p && *p ? p : "/tmp/sextant-machine.lock";
}

MachineLock::MachineLock(Mode mode) {
  const std::string path = machineLockPath();
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) return;
  fchmod(fd_, 0666);  // every user's Sextant takes turns on this machine (umask aside)
  const int op = mode == Mode::Measure ? LOCK_EX : LOCK_SH;
  const auto start = std::chrono::steady_clock::now();
  bool told = false;
  while (flock(fd_, op | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {  // no locking on this file system: not enforced
      close(fd_);
      fd_ = -1;
      return;
    }
    if (stopRequested()) break;  // Ctrl-C: the caller stops anyway
    if (!told && std::chrono::steady_clock::now() - start > std::chrono::seconds(5)) {
      fprintf(stderr, "sextant: waiting for another Sextant process on this machine to finish %s (lock %s)\n",
              mode == Mode::Measure ? "compiling or measuring" : "measuring", path.c_str());
      told = true;
    }
    usleep(2000);
  }
}

MachineLock::~MachineLock() {
  if (fd_ >= 0) {
    flock(fd_, LOCK_UN);
    close(fd_);
  }
}

std::string ChildOutcome::describe() const {
  switch (kind) {
    case Kind::Exited:
      return exit_code == 0 ? "finished" : "exited with code " + std::to_string(exit_code);
    case Kind::Signaled: {
      const char* name = sigabbrev_np(signal);
      return std::string("killed by SIG") + (name ? name : std::to_string(signal).c_str());
    }
    case Kind::TimedOut: {
      char buf[64];
      snprintf(buf, sizeof buf, "timed out after %.1f s", seconds);
      return buf;
    }
    case Kind::ForkFailed:
      return "could not start a child process";
    case Kind::Stopped:
      return "stopped (interrupted)";
  }
  return "?";
}

std::vector<ChildOutcome> runIsolated(const std::vector<IsolatedJob>& work, int jobs, double timeout_s) {
  std::vector<ChildOutcome> results(work.size());
  std::vector<Running> running;
  size_t next = 0;
  if (jobs < 1) jobs = 1;
  while (next < work.size() || !running.empty()) {
    if (g_stop_requested.load()) {
      // Ctrl-C: the children in flight are killed, the rest never start.
      for (auto& r : running) {
        kill(-r.pid, SIGKILL);
        kill(r.pid, SIGKILL);
        int status = 0;
        waitpid(r.pid, &status, 0);
        untrack(r.pid);
        if (r.out_fd >= 0) close(r.out_fd);
        if (r.err_fd >= 0) close(r.err_fd);
        results[r.index].kind = ChildOutcome::Kind::Stopped;
      }
      running.clear();
      for (; next < work.size(); ++next) results[next].kind = ChildOutcome::Kind::Stopped;
      break;
    }
    while (next < work.size() && int(running.size()) < jobs) {
      Running r;
      if (spawn(work[next], next, r)) {
        running.push_back(std::move(r));
      } else {
        results[next].kind = ChildOutcome::Kind::ForkFailed;
      }
      ++next;
    }
    if (running.empty()) continue;
    std::vector<pollfd> fds;
    for (auto& r : running) {
      fds.push_back({r.out_fd, POLLIN, 0});
      fds.push_back({r.err_fd, POLLIN, 0});
    }
    poll(fds.data(), fds.size(), 50);
    auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < running.size();) {
      Running& r = running[i];
      bool out_open = r.out_fd >= 0 && drain(r.out_fd, r.outcome.output);
      bool err_open = r.err_fd >= 0 && drain(r.err_fd, r.outcome.stderr_text);
      if (!out_open && r.out_fd >= 0) close(r.out_fd), r.out_fd = -1;
      if (!err_open && r.err_fd >= 0) close(r.err_fd), r.err_fd = -1;
      double elapsed = std::chrono::duration<double>(now - r.start).count();
      int status = 0;
      pid_t w = 0;
      bool timed_out = false;
      if (r.out_fd < 0 && r.err_fd < 0) {
        w = waitpid(r.pid, &status, 0);
      } else if (elapsed > timeout_s) {
        kill(-r.pid, SIGKILL);
        kill(r.pid, SIGKILL);
        w = waitpid(r.pid, &status, 0);
        timed_out = true;
      } else {
        w = waitpid(r.pid, &status, WNOHANG);
        // A child that exited but left a grandchild holding the pipe: treat as done.
        if (w == r.pid) {
          drain(r.out_fd, r.outcome.output);
          drain(r.err_fd, r.outcome.stderr_text);
        }
      }
      if (w != r.pid) {
        ++i;
        continue;
      }
      untrack(r.pid);
      if (r.out_fd >= 0) close(r.out_fd);
      if (r.err_fd >= 0) close(r.err_fd);
      ChildOutcome& o = r.outcome;
      o.seconds = elapsed;
      if (timed_out) {
        o.kind = ChildOutcome::Kind::TimedOut;
        o.output.clear();
      } else if (WIFSIGNALED(status)) {
        o.kind = ChildOutcome::Kind::Signaled;
        o.signal = WTERMSIG(status);
        o.output.clear();
      } else {
        o.kind = ChildOutcome::Kind::Exited;
        o.exit_code = WEXITSTATUS(status);
        if (o.exit_code != 0) o.output.clear();
      }
      results[r.index] = std::move(o);
      running.erase(running.begin() + long(i));
    }
  }
  return results;
}

ChildOutcome runIsolated(const IsolatedJob& job, double timeout_s) {
  return runIsolated(std::vector<IsolatedJob>{job}, 1, timeout_s).front();
}

void killAllChildren() {
  for (auto& slot : g_children) {
    pid_t pid = slot.load();
    if (pid > 0) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
  }
}

void requestStop() { g_stop_requested.store(true); }
bool stopRequested() { return g_stop_requested.load(); }
void clearStopRequest() { g_stop_requested.store(false); }

bool limitChildAddressSpace(long long extra_bytes) {
  if (extra_bytes <= 0) return true;
  long long pages = 0;
  std::ifstream statm("/proc/self/statm");
  if (!(statm >> pages) || pages <= 0) return false;
  const long long now = pages * sysconf(_SC_PAGESIZE);
  struct rlimit lim;
  if (getrlimit(RLIMIT_AS, &lim) != 0) return false;
  rlim_t want = rlim_t(now + extra_bytes);
  if (lim.rlim_max != RLIM_INFINITY && want > lim.rlim_max) want = lim.rlim_max;
  lim.rlim_cur = want;
  return setrlimit(RLIMIT_AS, &lim) == 0;
}

void bindOpenMpThreads() {
  for (const char* v : {"OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY", "GOMP_CPU_AFFINITY"})
    if (getenv(v)) return;
  setenv("OMP_PROC_BIND", "true", 1);
}

long long defaultChildMemoryLimit() {
  long long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? pages * page / 2 : (8ll << 30);
}

}  // namespace sextant
