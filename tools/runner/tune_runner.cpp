// tune-runner: measures the kernels of a bundle on this machine's GPU and writes a results file.
// See runtime/README.md for the bundle and results formats.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "sextant/common/strings.h"
#include "sextant/runtime/bundle.h"
#include "sextant/runtime/gpu_runner.h"

using namespace sextant;

namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitNoDevice = 3, kExitInterrupted = 130;
// Between the supervising process and its worker only: the worker stopped after a device fault.
constexpr int kExitRestart = 4;
// Every restart records the kernel that faulted and resumes after it, so a bundle needs at most one
// per kernel; the floor of 20 keeps the old allowance for small bundles. (The first GPU run, an H200,
// 2026-11-26, had 21 faulting wgmma kernels in one 91-kernel bundle: a fixed 20 skipped the rest.)
constexpr size_t kMinRestarts = 20;

const char* kUsage = R"USAGE(usage: tune-runner BUNDLE_DIR [options]

Measures every kernel of a Sextant kernel bundle (BUNDLE_DIR/manifest.json and its kernel files)
on this machine's GPU: CUDA for vendor "nvidia" bundles, HIP for "amd" ones. For each workload the
inputs are generated once (uniform in [-1, 1], seed 42) and the first result of every kernel is
checked against a double-precision CPU reference; then the kernel is timed with GPU events, with
the L2 cache flushed before every repetition. cuBLAS is measured as the reference per workload.
The results file is rewritten after every kernel: a crash or Ctrl-C loses nothing measured.
Measurement runs in a worker process: after a kernel faults on the device (illegal address, ...),
a timeout, or a crash of the worker, a fresh worker goes on with the next kernel (at most 20
times), so no kernel is measured in a context that was reset under cuBLAS's feet.

options:
  -o, --output FILE   results file (default: BUNDLE_DIR/results.json)
  --min-reps N        timed repetitions, at least (default 10)
  --max-reps N        timed repetitions, at most (default 1000)
  --min-time S        repeat until the timed launches add up to S seconds (default 0.5)
  --timeout S         deadline for one launch to finish, seconds (default 10); a kernel that
                      misses it leaves the GPU context unusable: later kernels are "skipped"
  --warmup N          untimed launches, the first one verified (default 2)
  --seed N            input seed (default 42)
  --no-flush          do not flush the L2 between repetitions
  --no-reference      do not measure cuBLAS
  --only ID[,ID...]   measure only these kernels
  --time-budget S     stop starting kernels after S seconds (the rest are "skipped",
                      "time budget spent"); 0: none (default)
  --resume            keep the results already in the results file and measure the rest
  --device N          GPU ordinal (default 0)
  --list              print the bundle's kernels and exit (needs no GPU)
  --describe-vulkan   print this machine's Vulkan devices as the description that
                      tune --vulkan-device reads (no bundle needed) and exit
  -h, --help          this text
  --version           print the version

exit status: 0 every selected kernel was handled (whatever its status: ok, wrong_result,
load_error, launch_error, timeout, skipped); 1 the results file could not be rewritten during the
run; 2 bad usage, invalid bundle, or a bundle built for another GPU architecture; 3 no usable GPU
("no CUDA device found (...)", nothing is written); 130 interrupted (results so far are written,
the kernels not measured are recorded as "skipped").
)USAGE";

std::atomic<int> g_interrupts{0};

void onSignal(int sig) {
  if (g_interrupts.fetch_add(1) >= 1) {  // second signal: stop at once
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

[[noreturn]] void usageError(const std::string& msg) {
  fprintf(stderr, "tune-runner: error: %s\n(tune-runner --help explains the options)\n", msg.c_str());
  exit(kExitUsage);
}

struct Args {
  std::string bundle;
  std::string output;
  GpuMeasureOptions measure;
  bool reference = true;
  std::vector<std::string> only;
  int device = 0;
  bool list = false;
  bool resume = false;
  double time_budget = 0;
};

int64_t parseIntArg(const std::string& opt, const std::string& v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  if (!parseInt64(v, x) || x < lo || x > hi)
    usageError(opt + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
  return x;
}

double parseSecondsArg(const std::string& opt, const std::string& v, bool allow_zero) {
  char* end = nullptr;
  errno = 0;
  double x = strtod(v.c_str(), &end);
  if (v.empty() || errno || *end || !std::isfinite(x) || x < 0 || (!allow_zero && x == 0) || x > 86400)
    usageError(opt + " expects a " + (allow_zero ? "non-negative" : "positive") + " number of seconds, got '" + v + "'");
  return x;
}

Args parseArgs(int argc, char** argv) {
  Args a;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      has_value = true;
    }
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) usageError(arg + " needs a value");
      return argv[++i];
    };
    auto flag = [&]() {
      if (has_value) usageError(arg + " takes no value");
    };
    if (arg == "-h" || arg == "--help") {
      fputs(kUsage, stdout);
      exit(kExitOk);
    } else if (arg == "--version") {
      printf("tune-runner %s\n", SEXTANT_VERSION);
      exit(kExitOk);
    } else if (arg == "-o" || arg == "--output") {
      a.output = next();
      if (a.output.empty()) usageError("--output needs a file name");
    } else if (arg == "--min-reps") {
      a.measure.min_reps = int(parseIntArg(arg, next(), 1, 1000000));
    } else if (arg == "--max-reps") {
      a.measure.max_reps = int(parseIntArg(arg, next(), 1, 1000000));
    } else if (arg == "--min-time") {
      a.measure.min_time_s = parseSecondsArg(arg, next(), true);
    } else if (arg == "--timeout") {
      a.measure.timeout_s = parseSecondsArg(arg, next(), false);
    } else if (arg == "--warmup") {
      a.measure.warmup = int(parseIntArg(arg, next(), 1, 1000));
    } else if (arg == "--seed") {
      a.measure.seed = uint64_t(parseIntArg(arg, next(), 0, INT64_MAX));
    } else if (arg == "--no-flush") {
      flag();
      a.measure.flush_l2 = false;
    } else if (arg == "--no-reference") {
      flag();
      a.reference = false;
    } else if (arg == "--only") {
      for (const auto& id : split(next(), ','))
        if (!id.empty()) a.only.push_back(id);
      if (a.only.empty()) usageError("--only needs at least one kernel id");
    } else if (arg == "--device") {
      a.device = int(parseIntArg(arg, next(), 0, 1023));
    } else if (arg == "--describe-vulkan") {
      auto list = listVulkanDevices();
      if (!list) {
        fprintf(stderr, "tune-runner: %s\n", list.error().c_str());
        exit(3);
      }
      printf("%s\n", vulkanDevicesJson(*list).c_str());
      exit(0);
    } else if (arg == "--list") {
      flag();
      a.list = true;
    } else if (arg == "--resume") {
      flag();
      a.resume = true;
    } else if (arg == "--time-budget") {
      a.time_budget = parseSecondsArg(arg, next(), true);
    } else if (!arg.empty() && arg[0] == '-') {
      usageError("unknown option '" + arg + "'");
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.empty()) usageError("no bundle directory given");
  if (positional.size() > 1) usageError("one bundle directory expected, got " + std::to_string(positional.size()));
  a.bundle = positional[0];
  if (a.measure.max_reps < a.measure.min_reps)
    usageError("--max-reps (" + std::to_string(a.measure.max_reps) + ") is below --min-reps (" +
               std::to_string(a.measure.min_reps) + ")");
  if (a.output.empty()) a.output = (std::filesystem::path(a.bundle) / "results.json").string();
  return a;
}

std::string bytes(int64_t b) {
  char buf[64];
  if (b < 0) return "?";
  if (b >= (int64_t(1) << 20))
    snprintf(buf, sizeof buf, "%.1f MiB", double(b) / 1048576.0);
  else if (b >= 1024)
    snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024.0);
  else
    snprintf(buf, sizeof buf, "%lld B", (long long)b);
  return buf;
}

std::string dims(const std::array<uint32_t, 3>& d) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

void listBundle(const std::string& dir, const BundleManifest& m) {
  printf("bundle %s: target %s (%s %s), created by %s at %s\n", dir.c_str(), m.target.c_str(), m.vendor.c_str(),
         m.arch.c_str(), m.created_by.c_str(), m.created_at.c_str());
  printf("%zu workload(s), %zu kernel(s)\n", m.workloads.size(), m.kernels.size());
  size_t idw = 2;
  for (const auto& k : m.kernels) idw = std::max(idw, k.id.size());
  for (const auto& w : m.workloads) {
    printf("\n%s\n", w.c_str());
    printf("  %-*s  %-6s  %-14s  %-12s  %-10s  %s\n", int(idw), "id", "format", "grid", "block", "dyn smem", "kernel");
    for (const auto& k : m.kernels) {
      if (k.workload != w) continue;
      printf("  %-*s  %-6s  %-14s  %-12s  %-10s  %s\n", int(idw), k.id.c_str(), kernelFormatName(k.format),
             dims(k.grid).c_str(), dims(k.block).c_str(), bytes(k.dynamic_shared_bytes).c_str(), k.kernel_name.c_str());
    }
  }
}

std::string resourcesText(const std::optional<KernelResources>& r) {
  if (!r) return "";
  char buf[160];
  snprintf(buf, sizeof buf, "regs %lld  local %s  smem %s", (long long)r->registers, bytes(r->local_bytes).c_str(),
           bytes(r->static_shared_bytes).c_str());
  return buf;
}

void printProgress(const KernelResult& r, size_t done, size_t total) {
  int w = int(std::to_string(total).size());
  if (r.status == "ok") {
    fprintf(stderr, "[%*zu/%zu] %-24s ok            %12.1f GFLOP/s  %9.4f ms  cv %5.2f%%  %s\n", w, done, total,
            r.id.c_str(), r.gflops, r.median_s * 1e3, r.cv * 100, resourcesText(r.resources).c_str());
  } else {
    std::string msg = r.message.size() > 300 ? r.message.substr(0, 300) + " ..." : r.message;
    std::string res = resourcesText(r.resources);
    fprintf(stderr, "[%*zu/%zu] %-24s %-13s %s%s%s\n", w, done, total, r.id.c_str(), r.status.c_str(), msg.c_str(),
            res.empty() ? "" : "  ", res.c_str());
  }
}

void printTable(const ResultsFile& r) {
  std::map<std::string, const ReferenceResult*> refs;
  for (const auto& x : r.references) refs[x.workload] = &x;
  std::vector<std::string> order;
  for (const auto& k : r.results)
    if (std::find(order.begin(), order.end(), k.workload) == order.end()) order.push_back(k.workload);
  size_t idw = 6;
  for (const auto& k : r.results) idw = std::max(idw, k.id.size());
  for (const auto& w : order) {
    const ReferenceResult* ref = refs.count(w) ? refs[w] : nullptr;
    printf("\n%s\n", w.c_str());
    printf("  %-*s  %-13s  %12s  %10s  %7s  %7s  %5s  %10s  %10s\n", int(idw), "kernel", "status", "GFLOP/s",
           "median ms", "cv", "vs ref", "regs", "local", "smem");
    if (ref) {
      if (ref->status == "ok")
        printf("  %-*s  %-13s  %12.1f  %10.4f  %6.2f%%  %7s\n", int(idw), ref->peer.c_str(), "ok", ref->gflops,
               ref->median_s * 1e3, ref->cv * 100, "100%");
      else
        printf("  %-*s  %-13s  %s\n", int(idw), ref->peer.c_str(), ref->status.c_str(), ref->message.c_str());
    }
    std::vector<const KernelResult*> ks;
    for (const auto& k : r.results)
      if (k.workload == w) ks.push_back(&k);
    std::stable_sort(ks.begin(), ks.end(), [](const KernelResult* a, const KernelResult* b) {
      bool ao = a->status == "ok", bo = b->status == "ok";
      if (ao != bo) return ao;
      return ao && a->gflops > b->gflops;
    });
    for (const auto* k : ks) {
      if (k->status == "ok") {
        char vs[32] = "";
        if (ref && ref->status == "ok" && ref->gflops > 0) snprintf(vs, sizeof vs, "%.0f%%", 100 * k->gflops / ref->gflops);
        const auto& res = k->resources;
        printf("  %-*s  %-13s  %12.1f  %10.4f  %6.2f%%  %7s  %5lld  %10s  %10s\n", int(idw), k->id.c_str(), "ok",
               k->gflops, k->median_s * 1e3, k->cv * 100, vs, res ? (long long)res->registers : -1LL,
               res ? bytes(res->local_bytes).c_str() : "?", res ? bytes(res->static_shared_bytes).c_str() : "?");
      } else {
        std::string msg = k->message.size() > 100 ? k->message.substr(0, 100) + " ..." : k->message;
        printf("  %-*s  %-13s  %s\n", int(idw), k->id.c_str(), k->status.c_str(), msg.c_str());
      }
    }
  }
}

// What the worker shares with the supervising process (an anonymous shared mapping made before
// the fork): the id of the kernel being measured, so that a crash of the worker can be pinned on it.
struct Shared {
  char current[256];
};

double steadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The worker: opens the GPU, measures (resuming when asked), prints the table. Returns an exit
// status, kExitRestart when it stopped after a fault and a fresh worker should go on.
int measure(const Args& args, const BundleManifest& m, const std::string& command, bool resume, bool last_try,
            double deadline, Shared* shared) {
  auto dev = openGpuDevice(m.vendor, args.device);
  if (!dev) {
    fprintf(stderr, "tune-runner: %s\n", dev.error().c_str());
    fprintf(stderr, "tune-runner: nothing measured, no results file written\n");
    return kExitNoDevice;
  }
  GpuDevice& gpu = **dev;
  const DeviceInfo& info = gpu.info();

  std::set<KernelFormat> formats;
  for (const auto& k : m.kernels)
    if (args.only.empty() || std::find(args.only.begin(), args.only.end(), k.id) != args.only.end())
      formats.insert(k.format);
  for (KernelFormat f : formats) {
    auto st = checkArchCompatible(m.arch, f, info);
    if (!st) {
      fprintf(stderr, "tune-runner: error: %s\n", st.error().c_str());
      return kExitUsage;
    }
  }

  RunOptions ro;
  if (resume) {
    auto prev = readResults(args.output);
    if (!prev) {
      fprintf(stderr, "tune-runner: error: --resume: %s\n", prev.error().c_str());
      return kExitUsage;
    }
    ro.resume_from = *prev;
  }
  size_t selected = args.only.empty() ? m.kernels.size() : args.only.size();
  fprintf(stderr, "tune-runner: %s (%s, %lld SMs, L2 %s, %s memory, driver %s); %zu kernel(s) -> %s%s\n",
          info.name.c_str(), info.arch.c_str(), (long long)info.sm_count, bytes(info.l2_bytes).c_str(),
          bytes(info.memory_bytes).c_str(), info.driver_version.c_str(), selected, args.output.c_str(),
          resume ? " (resumed)" : "");

  ro.measure = args.measure;
  ro.reference = args.reference;
  ro.only = args.only;
  ro.results_path = args.output;
  ro.runner = std::string("tune-runner ") + SEXTANT_VERSION;
  ro.command = command;
  ro.stop_after_fault = !last_try;
  ro.deadline_s = deadline;
  ro.options = {{"min_reps", args.measure.min_reps},
                {"max_reps", args.measure.max_reps},
                {"min_time_s", args.measure.min_time_s},
                {"timeout_s", args.measure.timeout_s},
                {"warmup", args.measure.warmup},
                {"seed", args.measure.seed},
                {"flush_l2", args.measure.flush_l2},
                {"timing", gpu.timingMethod()},
                {"verification", "C checked after the first launch and again after the timed repetitions"},
                {"reference", args.reference},
                {"only", args.only},
                {"device", args.device},
                {"time_budget_s", args.time_budget},
                {"check_full_limit", args.measure.check.full_limit},
                {"check_samples", args.measure.check.samples},
                {"tolerance", "rtol 1e-3, atol 1e-4*sqrt(K) for f32 inputs; rtol 1e-2, atol 1e-3*sqrt(K) otherwise"}};

  signal(SIGINT, onSignal);
  signal(SIGTERM, onSignal);
  RunCallbacks cb;
  cb.on_start = [shared](const BundleKernel& k) {
    snprintf(shared->current, sizeof shared->current, "%s", k.id.c_str());
  };
  cb.on_kernel = [shared](const KernelResult& r, size_t done, size_t total) {
    shared->current[0] = 0;
    printProgress(r, done, total);
  };
  cb.on_reference = [](const ReferenceResult& r) {
    if (r.status == "ok")
      fprintf(stderr, "%s: %s %.1f GFLOP/s (%.4f ms, cv %.2f%%)\n", r.workload.c_str(), r.peer.c_str(), r.gflops,
              r.median_s * 1e3, r.cv * 100);
    else
      fprintf(stderr, "%s: %s %s: %s\n", r.workload.c_str(), r.peer.c_str(), r.status.c_str(), r.message.c_str());
  };
  cb.on_note = [](const std::string& n) { fprintf(stderr, "tune-runner: note: %s\n", n.c_str()); };
  cb.interrupted = [] { return g_interrupts.load() > 0; };

  auto res = runBundle(gpu, args.bundle, m, ro, cb);
  if (!res) {
    fprintf(stderr, "tune-runner: error: %s\n", res.error().c_str());
    fflush(nullptr);
    std::_Exit(kExitFailure);  // the device may be busy: no teardown
  }
  if (res->results.size() < selected && g_interrupts.load() == 0) {
    fflush(nullptr);
    std::_Exit(kExitRestart);  // after a fault: no teardown in this process
  }
  printTable(*res);
  std::map<std::string, int> counts;
  bool lost = false;
  for (const auto& k : res->results) {
    ++counts[k.status];
    lost = lost || k.status == "timeout";
  }
  std::string summary;
  for (const auto& [s, n] : counts) summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + s;
  printf("\n%zu kernel(s): %s; results in %s\n", res->results.size(), summary.c_str(), args.output.c_str());
  const int code = g_interrupts.load() > 0 ? kExitInterrupted : kExitOk;
  fflush(nullptr);
  // After a timeout the kernel may still be running: leave without touching the driver again
  // (process exit tears the context down).
  if (lost) std::_Exit(code);
  return code;
}

// A worker died (a signal) while measuring `id`: its result says so, and the next worker goes on.
bool recordCrash(const Args& args, const BundleManifest& m, const std::string& id, const std::string& why) {
  auto r = readResults(args.output);
  if (!r) return false;
  for (const auto& k : m.kernels) {
    if (k.id != id) continue;
    KernelResult kr;
    kr.id = k.id;
    kr.workload = k.workload;
    kr.status = "launch_error";
    kr.message = "the measuring process died (" + why + ") while measuring this kernel";
    r->results.push_back(kr);
    return writeResults(args.output, *r).ok();
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parseArgs(argc, argv);
  std::vector<std::string> argv_list(argv, argv + argc);
  const std::string command = join(argv_list, " ");

  auto bundle = readBundle(args.bundle);
  if (!bundle) {
    fprintf(stderr, "tune-runner: error: %s\n", bundle.error().c_str());
    return kExitUsage;
  }
  const BundleManifest& m = *bundle;
  if (args.list) {
    listBundle(args.bundle, m);
    return kExitOk;
  }
  std::set<std::string> ids;
  for (const auto& k : m.kernels) ids.insert(k.id);
  for (const auto& id : args.only)
    if (!ids.count(id)) usageError("--only: no kernel '" + id + "' in " + args.bundle);
  {
    std::filesystem::path out(args.output);
    std::string dir = out.has_parent_path() ? out.parent_path().string() : ".";
    if (access(dir.c_str(), W_OK) != 0)
      usageError("cannot write the results file " + args.output + " (" + dir + ": " + strerror(errno) + ")");
    if (args.resume && access(args.output.c_str(), R_OK) != 0)
      usageError("--resume: no results file " + args.output + " to resume from");
  }

  // This process never touches the GPU: it forks workers (no fork after cuInit) and starts a
  // fresh one after a fault, a timeout or a crash.
  auto* shared = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED) {
    fprintf(stderr, "tune-runner: error: mmap: %s\n", strerror(errno));
    return kExitFailure;
  }
  const double deadline = args.time_budget > 0 ? steadyNow() + args.time_budget : 0;
  signal(SIGINT, onSignal);
  signal(SIGTERM, onSignal);
  bool resume = args.resume;
  const int max_restarts = int(std::max(kMinRestarts, m.kernels.size()));
  for (int restarts = 0;; ++restarts) {
    const bool last_try = restarts >= max_restarts;
    shared->current[0] = 0;
    fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "tune-runner: error: fork: %s\n", strerror(errno));
      return kExitFailure;
    }
    if (pid == 0) {
      g_interrupts = 0;
      int code = measure(args, m, command, resume, last_try, deadline, shared);
      fflush(nullptr);
      _exit(code);
    }
    int st = 0, forwarded = 0;
    while (waitpid(pid, &st, 0) < 0) {
      if (errno != EINTR) {
        fprintf(stderr, "tune-runner: error: waitpid: %s\n", strerror(errno));
        return kExitFailure;
      }
      // A signal sent to this process alone (kill PID): pass it on. (Ctrl-C reaches both.)
      while (forwarded < g_interrupts.load()) kill(pid, SIGINT), ++forwarded;
    }
    int code;
    if (WIFSIGNALED(st)) {
      const std::string why = std::string("signal ") + std::to_string(WTERMSIG(st)) + ", " + strsignal(WTERMSIG(st));
      const std::string id = shared->current;
      fprintf(stderr, "tune-runner: the measuring process died (%s)%s\n", why.c_str(),
              id.empty() ? "" : (" while measuring " + id).c_str());
      if (g_interrupts.load() > 0) return kExitInterrupted;
      if (id.empty() || !recordCrash(args, m, id, why)) return kExitFailure;
      code = kExitRestart;
    } else {
      code = WEXITSTATUS(st);
    }
    if (code != kExitRestart) return code;
    if (g_interrupts.load() > 0) return kExitInterrupted;
    fprintf(stderr, "tune-runner: continuing in a fresh process after a device fault (restart %d of at most %d)\n",
            restarts + 1, max_restarts);
    resume = true;
  }
}
