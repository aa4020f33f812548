// The GPU runner without a GPU: the no-device errors of the real backends, the architecture
// rules, and the measurement harness and bundle loop on a fake device whose "kernels" run on the
// host (correct, wrong, silent, hanging, faulting ones). With a CUDA device present, a PTX
// kernel written here is also measured for real.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "sextant/runtime/gpu_runner.h"

#include "fake_gpu.h"
#include "temp_dir.h"

using namespace sextant;
using namespace sextant::testing_gpu;
namespace fs = std::filesystem;

TEST(GpuOpen, NoCudaDeviceIsAnErrorNotACrash) {
  auto d = openCudaDevice(0);
  if (d.ok()) GTEST_SKIP() << "a CUDA device is present: " << (*d)->info().name;
  EXPECT_EQ(d.error().rfind("no CUDA device found (", 0), 0u) << d.error();
  EXPECT_EQ(d.error().back(), ')');
  // Asking again gives the same answer (the library is probed once).
  auto again = openCudaDevice(0);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), d.error());
  auto v = openGpuDevice("nvidia", 0);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error(), d.error());
}

TEST(GpuOpen, NoHipDeviceIsAnErrorNotACrash) {
  auto d = openHipDevice(0);
  if (d.ok()) GTEST_SKIP() << "a HIP device is present: " << (*d)->info().name;
  EXPECT_EQ(d.error().rfind("no HIP device found (", 0), 0u) << d.error();
  EXPECT_EQ(d.error().back(), ')');
  EXPECT_FALSE(openGpuDevice("amd", 0).ok());
  auto bad = openGpuDevice("intel", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("unknown GPU vendor 'intel'"), std::string::npos);
}

TEST(GpuArch, CompatibilityRules) {
  DeviceInfo a100{"nvidia", "A100", "sm_80", "12.4", 108, 40 << 20, 0};
  DeviceInfo a10{"nvidia", "A10", "sm_86", "12.4", 72, 6 << 20, 0};
  DeviceInfo h100{"nvidia", "H100", "sm_90", "12.4", 132, 50 << 20, 0};
  DeviceInfo b200{"nvidia", "B200", "sm_100", "12.8", 148, 126 << 20, 0};
  DeviceInfo mi300{"amd", "MI300X", "gfx942", "60342134", 304, 4 << 20, 0};
  auto st = checkArchCompatible("sm_90", KernelFormat::Ptx, a100);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("sm_90"), std::string::npos);
  EXPECT_NE(st.error().find("A100 (sm_80)"), std::string::npos) << st.error();
  EXPECT_FALSE(checkArchCompatible("sm_90", KernelFormat::Cubin, a100).ok());
  EXPECT_TRUE(checkArchCompatible("sm_80", KernelFormat::Ptx, h100).ok());    // PTX: JIT to newer
  EXPECT_TRUE(checkArchCompatible("sm_80", KernelFormat::Ptx, b200).ok());
  EXPECT_FALSE(checkArchCompatible("sm_80", KernelFormat::Cubin, h100).ok());  // cubin: same major only
  EXPECT_TRUE(checkArchCompatible("sm_80", KernelFormat::Cubin, a10).ok());
  EXPECT_FALSE(checkArchCompatible("sm_86", KernelFormat::Cubin, a100).ok());
  EXPECT_TRUE(checkArchCompatible("sm_90a", KernelFormat::Cubin, h100).ok());
  EXPECT_FALSE(checkArchCompatible("sm_90a", KernelFormat::Ptx, b200).ok());   // arch-specific
  EXPECT_TRUE(checkArchCompatible("sm_100", KernelFormat::Ptx, b200).ok());
  EXPECT_FALSE(checkArchCompatible("sm_100", KernelFormat::Ptx, h100).ok());
  EXPECT_TRUE(checkArchCompatible("gfx942", KernelFormat::Hsaco, mi300).ok());
  DeviceInfo mi300f = mi300;
  mi300f.arch = "gfx942:sramecc+:xnack-";
  EXPECT_TRUE(checkArchCompatible("gfx942", KernelFormat::Hsaco, mi300f).ok());
  EXPECT_FALSE(checkArchCompatible("gfx90a", KernelFormat::Hsaco, mi300).ok());
  EXPECT_FALSE(checkArchCompatible("gfx942", KernelFormat::Hsaco, h100).ok());
  EXPECT_FALSE(checkArchCompatible("sm_90", KernelFormat::Ptx, mi300).ok());
}

TEST(GpuHarness, MeasuresVerifiesAndReportsEveryKernel) {
  TempDir d{"gpu-test"};
  auto m = fakeBundle(d.str(), {{kernel("k-ok", kW0), "naive CAB"},
                                {kernel("k-abc", kW0, {KernelArg::buf('A'), KernelArg::buf('B'), KernelArg::buf('C')}),
                                 "naive ABC"},
                                {kernel("k-order", kW0), "naive ABC"},  // manifest says C, A, B: faults
                                {kernel("k-wrong", kW0), "wrong CAB"},
                                {kernel("k-silent", kW0), "silent CAB"},
                                {kernel("k-garbage", kW0), "garbage CAB"},
                                {kernel("k-ok1", kW1), "naive CAB"},
                                {kernel("k-ok2", kW2), "naive CAB"}});
  FakeDevice dev;
  std::string results = (d.path / "results.json").string();
  RunOptions o = fastOptions(results);
  size_t calls = 0;
  RunCallbacks cb;
  cb.on_kernel = [&](const KernelResult& r, size_t done, size_t total) {
    ++calls;
    EXPECT_EQ(done, calls);
    EXPECT_EQ(total, 8u);
    // The results file on disk already holds this kernel.
    auto onDisk = readResults(results);
    ASSERT_TRUE(onDisk.ok()) << onDisk.error();
    EXPECT_EQ(onDisk->results.size(), done);
    EXPECT_EQ(onDisk->results.back().id, r.id);
  };
  auto r = runBundle(dev, d.str(), m, o, cb);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(calls, 8u);
  ASSERT_EQ(r->results.size(), 8u);

  const KernelResult* ok = find(*r, "k-ok");
  EXPECT_EQ(ok->status, "ok") << ok->message;
  EXPECT_EQ(ok->times_s.size(), 20u);  // min_time 0.02 s of 1 ms launches
  EXPECT_DOUBLE_EQ(ok->median_s, 1e-3);
  EXPECT_NEAR(ok->gflops, 2.0 * 24 * 16 * 40 / 1e-3 / 1e9, 1e-9);
  EXPECT_EQ(ok->checked_entries, 24 * 16);
  ASSERT_TRUE(ok->resources.has_value());
  EXPECT_EQ(ok->resources->registers, 40);
  EXPECT_EQ(ok->resources->max_threads_per_block, 512);
  EXPECT_EQ(find(*r, "k-abc")->status, "ok");
  EXPECT_EQ(find(*r, "k-order")->status, "launch_error");  // wrote C into the smaller B: illegal address
  EXPECT_EQ(dev.resets, 1);
  const KernelResult* wrong = find(*r, "k-wrong");
  EXPECT_EQ(wrong->status, "wrong_result");
  EXPECT_NE(wrong->message.find("C[23][15]"), std::string::npos) << wrong->message;
  EXPECT_TRUE(wrong->times_s.empty());
  const KernelResult* silent = find(*r, "k-silent");
  EXPECT_EQ(silent->status, "wrong_result");  // C was poisoned with NaN
  EXPECT_NE(silent->message.find("nan"), std::string::npos) << silent->message;
  const KernelResult* garbage = find(*r, "k-garbage");
  EXPECT_EQ(garbage->status, "load_error");
  EXPECT_NE(garbage->message.find("CUDA_ERROR_INVALID_PTX"), std::string::npos);
  EXPECT_FALSE(garbage->resources.has_value());
  EXPECT_EQ(find(*r, "k-ok1")->status, "ok") << find(*r, "k-ok1")->message;
  EXPECT_EQ(find(*r, "k-ok2")->status, "ok") << find(*r, "k-ok2")->message;

  // cuBLAS (the fake peer) once per workload, verified and timed like a kernel.
  ASSERT_EQ(r->references.size(), 3u);
  EXPECT_EQ(r->references[0].workload, kW0);
  EXPECT_EQ(r->references[0].peer, "cublas");
  EXPECT_EQ(r->references[0].status, "ok");
  EXPECT_EQ(r->references[0].checked_entries, 24 * 16);
  // Every timed launch came after an L2 flush of at least twice the L2 size.
  EXPECT_GE(dev.scratch_fills, 20 * (4 + 3));
  EXPECT_GE(dev.largest_fill, size_t(2 * dev.info_.l2_bytes));
  EXPECT_EQ(dev.loads, dev.unloads);
  EXPECT_EQ(dev.liveAllocations(), 0u);  // everything freed at the end

  auto onDisk = readResults(results);
  ASSERT_TRUE(onDisk.ok());
  EXPECT_EQ(*onDisk, *r);
  EXPECT_EQ(onDisk->device->name, "Fake GPU");
}

TEST(GpuHarness, ScalarArgumentsArePassedByValue) {
  TempDir d{"gpu-test"};
  std::vector<KernelArg> args = {KernelArg::buf('C'), KernelArg::buf('A'), KernelArg::buf('B'), KernelArg::i32(7),
                                 KernelArg::i64(int64_t(1) << 40)};
  std::vector<KernelArg> wrong = args;
  wrong[3] = KernelArg::i32(8);
  auto m = fakeBundle(d.str(), {{kernel("good", kW2, args), "scalars CAB"}, {kernel("bad", kW2, wrong), "scalars CAB"}});
  FakeDevice dev;
  auto r = runBundle(dev, d.str(), m, fastOptions((d.path / "r.json").string()));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(find(*r, "good")->status, "ok") << find(*r, "good")->message;
  EXPECT_EQ(find(*r, "bad")->status, "wrong_result");
}

// The wgmma route's kernels take TMA tensor maps of A and B: the runner encodes them over its own
// buffers, passes their device addresses, and frees them; a map larger than its buffer or a
// driver without TMA is a launch error of that kernel, not of the run.
TEST(GpuHarness, TensorMapArgumentsAreMadeOverTheBuffers) {
  TempDir d{"gpu-test"};
  TensorMapSpec ta{'A', "f16", {40, 24}, 80, {8, 8}, 128}, tb{'B', "f16", {16, 40}, 32, {8, 8}, 128};
  TensorMapSpec big = ta;
  big.dims[1] = 48;
  auto m = fakeBundle(d.str(), {{kernel("tma", kW0, {KernelArg::tensorMap(ta), KernelArg::tensorMap(tb), KernelArg::buf('C')}),
                                 "naive abC"},
                                {kernel("big", kW0, {KernelArg::tensorMap(big), KernelArg::tensorMap(tb), KernelArg::buf('C')}),
                                 "naive abC"}});
  {
    FakeDevice dev;
    auto r = runBundle(dev, d.str(), m, fastOptions((d.path / "r.json").string()));
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(find(*r, "tma")->status, "ok") << find(*r, "tma")->message;
    ASSERT_EQ(dev.tensor_maps.size(), 2u);
    EXPECT_EQ(dev.tensor_maps[0], ta);
    EXPECT_EQ(dev.tensor_maps[1], tb);
    EXPECT_EQ(find(*r, "big")->status, "launch_error");
    EXPECT_NE(find(*r, "big")->message.find("larger than the buffer"), std::string::npos) << find(*r, "big")->message;
    EXPECT_EQ(dev.liveAllocations(), 0u);
  }
  FakeDevice old_driver;
  old_driver.tma_available = false;
  auto r = runBundle(old_driver, d.str(), m, fastOptions((d.path / "r2.json").string()));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(find(*r, "tma")->status, "launch_error");
  EXPECT_NE(find(*r, "tma")->message.find("cuTensorMapEncodeTiled"), std::string::npos) << find(*r, "tma")->message;
}

TEST(GpuHarness, RepetitionLimits) {
  TempDir d{"gpu-test"};
  auto m = fakeBundle(d.str(), {{kernel("k", kW2), "naive CAB"}});
  FakeDevice dev;
  RunOptions o = fastOptions((d.path / "r.json").string());
  o.reference = false;
  o.measure.min_time_s = 10;  // unreachable: max_reps stops it
  o.measure.max_reps = 13;
  auto r = runBundle(dev, d.str(), m, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->results[0].times_s.size(), 13u);
  EXPECT_TRUE(r->references.empty());
  o.measure.min_time_s = 0;
  o.measure.min_reps = 3;
  o.measure.warmup = 4;
  dev.launches = 0;
  r = runBundle(dev, d.str(), m, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->results[0].times_s.size(), 3u);
  EXPECT_EQ(dev.launches, 4 + 3);  // warm-ups (the first verified), then the timed ones
}

TEST(GpuHarness, TimeoutLosesTheContextAndLaterKernelsAreSkipped) {
  TempDir d{"gpu-test"};
  auto m = fakeBundle(d.str(), {{kernel("before", kW0), "naive CAB"},
                                {kernel("stuck", kW0), "hang CAB"},
                                {kernel("after", kW0), "naive CAB"},
                                {kernel("next-workload", kW1), "naive CAB"}});
  FakeDevice dev;
  std::string results = (d.path / "results.json").string();
  auto r = runBundle(dev, d.str(), m, fastOptions(results));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(find(*r, "before")->status, "ok");
  const KernelResult* stuck = find(*r, "stuck");
  EXPECT_EQ(stuck->status, "timeout");
  EXPECT_NE(stuck->message.find("did not finish within 0.2 s"), std::string::npos) << stuck->message;
  for (const char* id : {"after", "next-workload"}) {
    EXPECT_EQ(find(*r, id)->status, "skipped");
    EXPECT_EQ(find(*r, id)->message, "context lost after a timeout in stuck");
  }
  EXPECT_EQ(r->references.size(), 1u);  // none for the workload after the loss
  auto onDisk = readResults(results);
  ASSERT_TRUE(onDisk.ok());
  EXPECT_EQ(onDisk->results.size(), 4u);
}

TEST(GpuHarness, AFaultResetsTheDeviceAndTheRunGoesOn) {
  TempDir d{"gpu-test"};
  auto m = fakeBundle(d.str(), {{kernel("faulty", kW0), "fault CAB"}, {kernel("fine", kW0), "naive CAB"}});
  FakeDevice dev;
  auto r = runBundle(dev, d.str(), m, fastOptions((d.path / "r.json").string()));
  ASSERT_TRUE(r.ok()) << r.error();
  const KernelResult* faulty = find(*r, "faulty");
  EXPECT_EQ(faulty->status, "launch_error");
  EXPECT_NE(faulty->message.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << faulty->message;
  EXPECT_NE(faulty->message.find("the device was reset"), std::string::npos) << faulty->message;
  EXPECT_EQ(dev.resets, 1);
  EXPECT_EQ(find(*r, "fine")->status, "ok") << find(*r, "fine")->message;
}

TEST(GpuHarness, InterruptionAndOnlyAndMissingPeer) {
  TempDir d{"gpu-test"};
  auto m = fakeBundle(d.str(), {{kernel("a", kW0), "naive CAB"}, {kernel("b", kW0), "naive CAB"},
                                {kernel("c", kW1), "naive CAB"}, {kernel("d", kW2), "naive CAB"}});
  FakeDevice dev;
  dev.peer_available = false;
  RunOptions o = fastOptions((d.path / "r.json").string());
  o.only = {"d", "a", "b"};
  int seen = 0;
  RunCallbacks cb;
  std::vector<std::string> notes;
  cb.on_kernel = [&](const KernelResult&, size_t, size_t total) {
    ++seen;
    EXPECT_EQ(total, 3u);
  };
  cb.on_note = [&](const std::string& n) { notes.push_back(n); };
  cb.interrupted = [&] { return seen >= 1; };
  auto r = runBundle(dev, d.str(), m, o, cb);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->results.size(), 3u);  // c is not selected
  EXPECT_EQ(r->results[0].id, "a");  // manifest order, grouped by workload
  EXPECT_EQ(r->results[0].status, "ok");
  EXPECT_EQ(r->results[1].status, "skipped");
  EXPECT_EQ(r->results[1].message, "interrupted");
  EXPECT_EQ(r->results[2].id, "d");
  EXPECT_EQ(r->results[2].status, "skipped");
  EXPECT_TRUE(r->references.empty());
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("cuBLAS not loadable"), std::string::npos);
  EXPECT_EQ(notes, r->notes);

  o.only = {"zzz"};
  auto bad = runBundle(dev, d.str(), m, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("unknown kernel id 'zzz'"), std::string::npos);
}

TEST(GpuHarness, BenchDirectlyWithProblemsAtTheSameAddress) {
  FakeDevice dev;
  GpuMeasureOptions o;
  o.min_reps = 2;
  o.min_time_s = 0;
  GemmBench bench(dev, o);
  std::optional<GemmHostProblem> p;
  for (const std::string& key : {kW2, kW1, kW0}) {  // growing: stale buffers would be too small
    p.emplace(*GemmHostProblem::create(*parseWorkloadKey(key)));  // same storage every time
    ASSERT_TRUE(bench.setProblem(*p).ok());
    KernelLaunchSpec k;
    k.id = "k";
    k.image = "naive CAB " + key;
    k.args = {KernelArg::buf('C'), KernelArg::buf('A'), KernelArg::buf('B')};
    GpuMeasurement m = bench.measureKernel(k);
    EXPECT_EQ(m.status, GpuStatus::Ok) << key << ": " << m.message;
    EXPECT_EQ(m.times_s.size(), 2u);
    EXPECT_EQ(m.checked_entries, p->checkedEntries());
  }
  KernelLaunchSpec big;
  big.image = "naive CAB " + kW0;
  big.args = {KernelArg::buf('C'), KernelArg::buf('A'), KernelArg::buf('B')};
  big.dims.block = {1024, 1, 1};  // above the fake kernel's 512
  GpuMeasurement m = bench.measureKernel(big);
  EXPECT_EQ(m.status, GpuStatus::LaunchError);
  EXPECT_TRUE(m.resources.has_value());
}

TEST(GpuHarness, UnwritableResultsFileIsAnError) {
  TempDir d{"gpu-test"};
  auto m = fakeBundle(d.str(), {{kernel("a", kW2), "naive CAB"}});
  FakeDevice dev;
  auto r = runBundle(dev, d.str(), m, fastOptions((d.path / "no-such-dir" / "r.json").string()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("cannot write"), std::string::npos) << r.error();
}

// ---- On a machine with a CUDA device: a real kernel, JIT-compiled from PTX. ----

// C[M][N] = A[M][K] * B[K][N], f32, row-major, one thread per entry; params C, A, B, M, N, K.
// The self-test bundles of runtime/selftest (what scripts/gpu-validate.sh runs first), measured
// here when a CUDA device is present: every kernel must get the status its manifest expects.
void runSelftest(const std::string& name) {
  auto dev = openCudaDevice(0);
  if (!dev.ok()) GTEST_SKIP() << dev.error();
  const std::string dir = std::string(SEXTANT_SOURCE_DIR) + "/runtime/selftest/" + name;
  auto m = readBundle(dir);
  ASSERT_TRUE(m.ok()) << m.error();
  if (!checkArchCompatible(m->arch, m->kernels.front().format, (*dev)->info()).ok())
    GTEST_SKIP() << dir << " is for " << m->arch << ", the device is " << (*dev)->info().arch;
  TempDir d{"gpu-test"};
  RunOptions o = fastOptions((d.path / "results.json").string());
  o.measure.timeout_s = 10;
  auto r = runBundle(**dev, dir, *m, o);
  ASSERT_TRUE(r.ok()) << r.error();
  for (const auto& k : m->kernels) {
    const KernelResult* got = find(*r, k.id);
    ASSERT_NE(got, nullptr) << k.id;
    EXPECT_EQ(got->status, k.static_stats.value("expect", std::string("ok"))) << k.id << ": " << got->message;
    if (got->status == "ok") {
      EXPECT_EQ(got->verified, 2);
      EXPECT_GT(got->gflops, 0);
    }
  }
  if (r->references.empty()) {
    EXPECT_FALSE(r->notes.empty());  // why cuBLAS is missing
  }
}

TEST(GpuReal, GenericSelftestBundle) { runSelftest("generic"); }
TEST(GpuReal, SextantKernelsOnAnH100) { runSelftest("h100"); }

TEST(GpuSelftest, BundlesAreValidAndSayWhatTheyExpect) {
  for (const char* name : {"generic", "h100"}) {
    auto m = readBundle(std::string(SEXTANT_SOURCE_DIR) + "/runtime/selftest/" + name);
    ASSERT_TRUE(m.ok()) << m.error();
    for (const auto& k : m->kernels) {
      const std::string e = k.static_stats.value("expect", std::string());
      EXPECT_NE(std::find(resultStatuses().begin(), resultStatuses().end(), e), resultStatuses().end()) << k.id;
      // Sextant's kernels expected to pass were assembled by ptxas (a PTX-only one was refused by it).
      if (std::string(name) == "h100" && e == "ok") {
        EXPECT_EQ(k.format, KernelFormat::Cubin) << k.id;
      }
    }
  }
}
