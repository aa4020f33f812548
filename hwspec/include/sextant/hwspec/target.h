// Targets: what the tuner compiles for and measures on. The host CPU is read from
// /proc/cpuinfo and sysfs; GPU targets name an entry of the device table for their limits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sextant/common/result.h"

namespace sextant {

struct HostCpu {
  std::string model;            // "model name" from /proc/cpuinfo
  std::string vendor;           // vendor_id
  int family = 0, model_number = 0;  // "cpu family" and "model" (x86)
  int logical_cores = 1;
  double mhz = 0;               // as reported (may be nominal in a VM)
  std::vector<std::string> flags;
  std::string vector_isa;       // "avx512", "avx2", "sse"
  int vector_bits = 128;        // widest usable SIMD register
  int vector_registers = 16;    // architectural SIMD registers (32 with AVX-512)
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  std::string cache_source;     // "sysfs", "cpuid", or "" (unknown: features assume defaults)
  std::string llvm_cpu;         // LLVM's CPU name, where known (cpuOfRecords fills it; hostCpu() does
                                // not: the hwspec module links no LLVM, use codegen's llvmHostCpuName())

  bool hasFlag(const std::string& f) const;
  int f32Lanes() const { return vector_bits / 32; }
  int64_t lastLevelCacheBytes() const;
};

// The identity of a machine that measures (issue #35): records name it, and best, export,
// compile, "already tried", the final comparison and resume use this machine's records.
// "cpu:LLVM:ISA:VENDOR-FAMILY-MODEL:Nc", e.g. "cpu:znver5:avx512:AuthenticAMD-26-2:2c": machines
// of one kind (same CPU, same core count) share a key. `llvm_cpu`: LLVM's name for the host CPU
// (codegen's llvmHostCpuName; this module links no LLVM).
std::string machineKey(const HostCpu& cpu, const std::string& llvm_cpu);
// A machine key in words ("CPU znver5 (avx512), AuthenticAMD-26-2, 2 logical cores").
std::string describeMachineKey(const std::string& key);

// Parses /proc/cpuinfo-style text plus cache sizes (tests pass their own text).
HostCpu parseCpuInfo(const std::string& cpuinfo_text);
// The machine this process runs on (cpuinfo, sysfs or CPUID caches; no LLVM names: see llvm_cpu).
const HostCpu& hostCpu();
// Whether the CPU executes 512-bit vector operations as two 256-bit halves (AMD Zen 4: family 0x19
// with AVX-512). There a 256-bit stream reads memory faster than a 512-bit one (M = 1's GEMV default,
// codegen/src/cpu_route_gemv.cpp); on Zen 5 the opposite was measured. Intel is not known to split.
bool splitsWideVectors(const HostCpu& cpu);
// Intel AMX (issue #37): whether the CPU lists the tile unit with bf16 products (amx_tile, amx_bf16).
bool hasAmxBf16(const HostCpu& cpu);
// Asks Linux for the AMX tile-data permission for this process (arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA)), without which the first tile instruction raises SIGILL; the error says why
// it was refused. Idempotent. Compiled AMX kernels ask for it themselves when loaded (a
// constructor in the object); the measuring child asks first to report a refusal in words.
Status requestAmxPermission();

enum class TargetKind { Cpu, Nvidia, Amd, Vulkan };

struct Target {
  std::string name;       // canonical name: "cpu", "h100", ...
  TargetKind kind = TargetKind::Cpu;
  std::string arch;       // "x86_64-avx512", "sm_90", "gfx942"
  std::string device;     // GPU targets: the entry of the device table (hwspec/data/devices.json)
                          // whose limits the schedule space uses, e.g. "h100-sxm"; Vulkan: the
                          // device's index ("0"), its limits read from the device (gpu_target.h)
  std::string key() const;  // canonical key stored in the database
  bool isGpu() const { return kind != TargetKind::Cpu; }
  std::string vendor() const {
    return kind == TargetKind::Nvidia ? "nvidia" : kind == TargetKind::Amd ? "amd" : kind == TargetKind::Vulkan ? "vulkan" : "cpu";
  }
};

// CPU kernels on several threads (tune --threads N) are a target of their own: the arch gets a
// "-tN" suffix ("x86_64-avx512-t2"), so their records, models and exports never mix with the
// single-thread ones. 1 thread: the arch unchanged.
std::string cpuArchWithThreads(const std::string& arch, int threads);
int cpuArchThreads(const std::string& arch);  // the N of a "-tN" suffix; 1 without one
// `--threads N` applied to a resolved target: the CPU target on N threads; refuses N < 1, and
// N != 1 for GPU targets.
Result<Target> targetWithThreads(const Target& t, int threads);

// Names a user may type, in the order --help lists them. Aliases resolve to one canonical target:
// sm_90 -> h100, sm_80 -> a100, mi300x / gfx942 -> mi300; vulkan:N -> the N-th Vulkan device
// (vulkan = vulkan:0; one target key for every Vulkan device: records name the device that measured).
std::vector<std::string> knownTargetNames();
// Resolves a user-typed name; unknown names give an error listing the known ones.
Result<Target> resolveTarget(const std::string& name);

}  // namespace sextant
