// Static resource analysis of compiled GPU kernels (pre-flight, before any measurement):
// registers, spills, shared memory / LDS, and the occupancy they allow on the target. NVIDIA
// figures come from `ptxas -v` (the CUDA toolkit's assembler, when found) or, without it, the PTX
// text (shared memory only: registers are unknown until ptxas or the driver allocates them);
// AMD figures come from the code object's metadata note.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "sextant/common/result.h"
#include "sextant/hwspec/gpu_target.h"

namespace sextant {

struct GpuResources {
  std::string source;          // "ptxas 13.0", "ptx text", "amdgpu metadata"
  int64_t registers = -1;      // per thread (unified VGPR count on AMD gfx90a+); -1: unknown
  int64_t sgprs = -1;          // AMD scalar registers
  int64_t agprs = -1;          // AMD accumulation registers (AccVGPRs; part of `registers` on gfx90a+)
  int64_t spill_bytes = 0;     // NVIDIA spill stores + loads; AMD spilled VGPRs + SGPRs (count)
  int64_t stack_bytes = 0;     // NVIDIA stack frame / AMD private segment
  int64_t smem_bytes = -1;     // static shared memory / LDS per block
  int64_t dynamic_smem_bytes = 0;  // NVIDIA: the launch's dynamic shared memory (from the compiler, not ptxas)
  std::map<std::string, int64_t> toMap() const;
};

// ptxas: $SEXTANT_PTXAS, then PATH, then $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin.
// Empty if none is found.
std::string findPtxas();
std::string ptxasVersion(const std::string& ptxas);  // "13.0" or ""
// Assembles PTX to a cubin with -v and reads the resource lines.
Result<GpuResources> runPtxas(const std::string& ptxas, const std::string& ptx_path, const std::string& arch,
                              const std::string& cubin_path);
GpuResources parsePtxasOutput(const std::string& text);
// Bytes of `.shared` arrays declared in PTX text.
int64_t ptxSharedBytes(const std::string& ptx);
GpuResources fromAmdgpuMetadata(const std::map<std::string, int64_t>& md);

struct Preflight {
  bool ok = true;
  std::string reason;          // why it is rejected
  Occupancy occupancy;
};
// Rejects a kernel whose resources exceed the target's limits (too many registers or threads,
// too much shared memory, no block fits on an SM/CU) before it is measured. Spills are recorded,
// not rejected.
Preflight preflightCheck(const GpuTargetInfo& g, const GpuResources& r, int64_t threads_per_block);

}  // namespace sextant
