// Real GPU code generation (no GPU needed): PTX for sm_80 / sm_90 and gfx942 code objects from
// tuned schedules, checked for the instructions each knob must produce, plus the pre-flight
// resource reader on the real objects (ptxas -v when the CUDA toolkit's ptxas is present).
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/gpu_resources.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/codegen/library.h"

#include "gpu_build.h"

using namespace sextant;
using namespace sextant::testing_codegen;

namespace {

// The stretches of a disassembled kernel between barriers that issue MFMAs: how many, and how
// many of them also load from global memory and store to LDS (the next K tile's copy overlapping
// the MFMAs: LLVM may unroll the K loop and interleave the instructions, but not across a barrier).
std::pair<int, int> mfmaStretchesWithCopies(const std::string& isa) {
  int with_mfma = 0, overlapped = 0;
  size_t from = 0;
  while (from < isa.size()) {
    size_t to = isa.find("s_barrier", from);
    std::string seg = isa.substr(from, to == std::string::npos ? std::string::npos : to - from);
    if (seg.find("v_mfma") != std::string::npos) {
      ++with_mfma;
      overlapped += seg.find("global_load") != std::string::npos && seg.find("ds_write") != std::string::npos;
    }
    if (to == std::string::npos) break;
    from = to + 9;
  }
  return {with_mfma, overlapped};
}

// The body of the (first) scf.for of a scheduled IR, as text.
std::string forBody(const std::string& ir) {
  size_t a = ir.find("scf.for"), b = ir.find("scf.yield", a);
  return a == std::string::npos || b == std::string::npos ? "" : ir.substr(a, b - a);
}

// A gfx942 code object disassembled with LLVM 22's objdump (empty, with a failure, if that fails).
std::string gfx942Disassembly(const Built& b) {
  std::string dis = b.path + ".s";
  EXPECT_EQ(system((std::string(SEXTANT_LLVM_TOOLS) + "/llvm-objdump -d --mcpu=gfx942 " + b.path + " > " + dis).c_str()), 0);
  std::string isa = slurp(dis);
  std::filesystem::remove(dis);
  return isa;
}

void checkPtxas(const Built& b, const std::string& arch) {
  std::string ptxas = findPtxas();
  if (ptxas.empty()) {  // the test's other checks have run; it is reported as skipped, not passed
    GTEST_SKIP() << "no ptxas on this machine (CUDA toolkit): the PTX was not assembled";
  }
  auto r = runPtxas(ptxas, b.path, arch, b.path + ".cubin");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_GT(r->registers, 16);
  EXPECT_LE(r->registers, 255);
  EXPECT_EQ(r->smem_bytes, b.plan.smem_bytes);  // exactly the promoted, multi-buffered tiles
  std::filesystem::remove(b.path + ".cubin");
}

}  // namespace

TEST(GpuCodegen, TensorCoresWithCpAsyncPipelineOnSm90) {
  Built b = build("h100", "gemm:NN:512x1024x256:f16*f16->f32",
                  "block_m=128,block_n=128,block_k=32,mma=1,warp_m=64,warp_n=32,thread_m=2,thread_n=1,"
                  "copy_bits=128,pipeline=3,swizzle=0");
  ASSERT_TRUE(b.out.ok) << b.out.stage << ": " << b.out.message;
  EXPECT_NE(b.object.find(".target sm_90"), std::string::npos);
  EXPECT_GT(count(b.object, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), 0);
  EXPECT_GT(count(b.object, "ldmatrix.sync.aligned"), 0);
  EXPECT_GT(count(b.object, "cp.async.cg.shared.global"), 0);  // 16-byte copies bypassing L1
  EXPECT_GT(count(b.object, "cp.async.wait_group"), 0);
  EXPECT_EQ(ptxSharedBytes(b.object), b.plan.smem_bytes);
  // Launch read from the IR: 8x4 blocks of 256 threads, buffers passed as bare pointers.
  EXPECT_EQ(b.info.grid[0], 8);
  EXPECT_EQ(b.info.grid[1], 4);
  EXPECT_EQ(b.info.block[0], 256);
  EXPECT_EQ(b.info.block[1], 1);
  std::vector<std::string> args = b.info.args;
  std::sort(args.begin(), args.end());
  EXPECT_EQ(args, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(b.info.async_groups_per_iteration, 2);  // A and B copies
  EXPECT_NE(b.object.find(".entry " + b.info.name), std::string::npos);
  checkPtxas(b, "sm_90");
}

// bf16 on the tensor cores (compiler_bf16_mma.cpp): the f16 route's kernel (ldmatrix, cp.async,
// swizzle) with every mma.sync of the bf16 form, A/B passed as the bf16 buffers themselves, and
// ptxas-clean on sm_90 and sm_80.
TEST(GpuCodegen, Bf16TensorCoresOnSm90AndSm80) {
  struct Case {
    std::string target, arch, knobs;
  };
  for (const Case& c : {Case{"h100", "sm_90",
                             "block_m=128,block_n=128,block_k=32,mma=1,warp_m=64,warp_n=32,thread_m=2,thread_n=1,"
                             "copy_bits=128,pipeline=3,swizzle=0"},
                        Case{"a100", "sm_80",
                             "block_m=64,block_n=128,block_k=32,mma=1,warp_m=32,warp_n=64,thread_m=2,thread_n=1,"
                             "copy_bits=128,pipeline=2,swizzle=1"}}) {
    Built b = build(c.target, "gemm:NN:512x1024x256:bf16*bf16->f32", c.knobs);
    ASSERT_TRUE(b.out.ok) << b.out.stage << ": " << b.out.message.substr(0, 3000) << "\n" << b.info.scheduled_ir;
    EXPECT_GT(count(b.object, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), 0) << c.target;
    EXPECT_EQ(count(b.object, ".f16.f16"), 0) << "an f16 mma.sync left in a bf16 kernel";
    EXPECT_GT(count(b.object, "ldmatrix.sync.aligned"), 0);
    EXPECT_GT(count(b.object, "cp.async.cg.shared.global"), 0);
    EXPECT_EQ(ptxSharedBytes(b.object), b.plan.smem_bytes);
    std::vector<std::string> args = b.info.args;
    std::sort(args.begin(), args.end());
    EXPECT_EQ(args, (std::vector<std::string>{"A", "B", "C"}));
    checkPtxas(b, c.arch);
  }
}

// Tiles over 48 KiB (compiler_dynamic_smem.cpp): the buffers live in one extern dynamic shared
// array, the launch carries its size, ptxas sees no static shared memory, and the pre-flight
// counts the dynamic bytes against the device's opt-in maximum.
TEST(GpuCodegen, DynamicSharedMemoryPast48KiB) {
  bool no_ptxas = false;
  for (const char* knobs : {"block_m=128,block_n=256,block_k=64,mma=1,warp_m=64,warp_n=64,thread_m=2,thread_n=1,"
                            "copy_bits=128,pipeline=3,swizzle=1",
                            "block_m=128,block_n=128,block_k=64,mma=0,warp_m=16,warp_n=8,thread_m=8,thread_n=4,"
                            "copy_bits=128,pipeline=3,swizzle=0"}) {
    Built b = build("h100", "gemm:NN:512x1024x256:f16*f16->f32", knobs);
    ASSERT_TRUE(b.out.ok) << b.out.stage << ": " << b.out.message.substr(0, 3000);
    EXPECT_TRUE(b.plan.dynamic_smem) << knobs;
    EXPECT_GT(b.plan.smem_bytes, 48 * 1024);
    EXPECT_EQ(b.info.dynamic_smem_bytes, b.plan.smem_bytes) << knobs;
    EXPECT_NE(b.object.find(".extern .shared .align 128 .b8 sextant_dyn_smem[]"), std::string::npos) << knobs;
    EXPECT_EQ(ptxSharedBytes(b.object), 0) << "a static shared array beside the dynamic one";
    EXPECT_GT(count(b.object, "cp.async.cg.shared.global"), 0);
    std::string ptxas = findPtxas();
    if (ptxas.empty()) {
      no_ptxas = true;
      continue;
    }
    auto r = runPtxas(ptxas, b.path, "sm_90", b.path + ".cubin");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->smem_bytes, 0);
    GpuResources res = *r;
    res.dynamic_smem_bytes = b.info.dynamic_smem_bytes;
    Preflight pf = preflightCheck(*gpuTargetInfo(*resolveTarget("h100")), res, b.plan.threads);
    EXPECT_TRUE(pf.ok) << pf.reason;
    EXPECT_EQ(pf.occupancy.blocks_per_cu, 1);  // 144 KiB + 1 KiB reserved: one block per SM
    std::filesystem::remove(b.path + ".cubin");
  }
  // Within 48 KiB nothing changes: static shared memory, as before.
  Built s = build("h100", "gemm:NN:512x1024x256:f16*f16->f32",
                  "block_m=128,block_n=128,block_k=32,mma=1,warp_m=64,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,"
                  "pipeline=3,swizzle=0");
  ASSERT_TRUE(s.out.ok);
  EXPECT_FALSE(s.plan.dynamic_smem);
  EXPECT_EQ(s.info.dynamic_smem_bytes, 0);
  EXPECT_EQ(s.object.find("sextant_dyn_smem"), std::string::npos);
  // Pre-flight: past the opt-in maximum (163 KiB on an A100) a kernel is rejected with the reason.
  GpuResources r;
  r.registers = 64, r.smem_bytes = 0, r.dynamic_smem_bytes = 200 * 1024;
  Preflight pf = preflightCheck(*gpuTargetInfo(*resolveTarget("a100")), r, 256);
  EXPECT_FALSE(pf.ok);
  EXPECT_NE(pf.reason.find("dynamic"), std::string::npos) << pf.reason;
  if (no_ptxas) GTEST_SKIP() << "no ptxas on this machine (CUDA toolkit): the PTX was not assembled";
}

TEST(GpuCodegen, FmaWithoutPipelineHasNoAsyncCopiesOnSm80) {
  Built b = build("a100", "gemm:NN:256x256x128:f32*f32->f32",
                  "block_m=64,block_n=64,block_k=16,mma=0,warp_m=16,warp_n=8,thread_m=4,thread_n=4,"
                  "copy_bits=128,pipeline=1,swizzle=0");
  ASSERT_TRUE(b.out.ok) << b.out.stage << ": " << b.out.message;
  EXPECT_NE(b.object.find(".target sm_80"), std::string::npos);
  EXPECT_EQ(count(b.object, "mma.sync"), 0);
  EXPECT_EQ(count(b.object, "cp.async"), 0);
  EXPECT_GE(count(b.object, "fma.rn.f32"), 4 * 4 * 16);  // thread tile x K chunk, unrolled
  // 128-bit shared-memory stores of the copies. (The global loads stay 32-bit: LLVM cannot prove
  // 16-byte alignment of the global addresses; only cp.async copies move 16 bytes at once.)
  EXPECT_GT(count(b.object, "st.shared.v4.b32"), 0);
  EXPECT_GT(count(b.object, "ld.shared.v4"), 0);
  EXPECT_EQ(ptxSharedBytes(b.object), b.plan.smem_bytes);
  EXPECT_EQ(b.info.block[0], 16);
  EXPECT_EQ(b.info.block[1], 16);
  checkPtxas(b, "sm_80");
}

TEST(GpuCodegen, FmaPipelinedF32UsesCpAsync) {
  Built b = build("a100", "gemm:NN:256x256x128:f32*f32->f32",
                  "block_m=64,block_n=64,block_k=16,mma=0,warp_m=16,warp_n=8,thread_m=4,thread_n=4,"
                  "copy_bits=128,pipeline=2,swizzle=0");
  ASSERT_TRUE(b.out.ok) << b.out.stage << ": " << b.out.message;
  EXPECT_GT(count(b.object, "cp.async"), 0);
  EXPECT_EQ(ptxSharedBytes(b.object), b.plan.smem_bytes);
  checkPtxas(b, "sm_80");
}

TEST(GpuCodegen, Gfx942CodeObjectWithLdsAndMetadata) {
  Built b = build("mi300", "gemm:NN:256x512x128:f32*f32->f32",
                  "block_m=64,block_n=64,block_k=32,mma=0,warp_m=16,warp_n=8,thread_m=4,thread_n=4,"
                  "copy_bits=128,pipeline=1,swizzle=0");
  ASSERT_TRUE(b.out.ok) << b.out.stage << ": " << b.out.message;
  ASSERT_GE(b.object.size(), 64u);
  EXPECT_EQ(b.object.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(uint16_t(uint8_t(b.object[18]) | uint8_t(b.object[19]) << 8), 224);  // EM_AMDGPU
  auto md = readAmdgpuMetadata(b.object);
  ASSERT_TRUE(md.ok()) << md.error();
  EXPECT_EQ(md->at("group_segment_fixed_size"), b.plan.smem_bytes);  // LDS = the promoted tiles
  EXPECT_GT(md->at("vgpr_count"), 16);
  EXPECT_EQ(md->at("wavefront_size"), 64);
  EXPECT_EQ(b.info.stats.at("vgpr_count"), md->at("vgpr_count"));
  GpuResources r = fromAmdgpuMetadata(*md);
  auto g = gpuTargetInfo(*resolveTarget("mi300"));
  Preflight p = preflightCheck(*g, r, b.plan.threads);
  EXPECT_TRUE(p.ok) << p.reason;
  EXPECT_GT(p.occupancy.blocks_per_cu, 0);
  EXPECT_FALSE(readAmdgpuMetadata("not an elf").ok());
  // The ISA itself, disassembled with LLVM 22's objdump: FMAs on the SIMDs, LDS reads and writes
  // (the promoted tiles), workgroup barriers.
  std::string isa = gfx942Disassembly(b);
  EXPECT_GT(count(isa, "v_pk_fma_f32") + count(isa, "v_fma_f32") + count(isa, "v_fmac_f32"), 4 * 4 * 8);
  EXPECT_GT(count(isa, "ds_write") + count(isa, "ds_store"), 0);
  EXPECT_GT(count(isa, "ds_read") + count(isa, "ds_load"), 0);
  EXPECT_GT(count(isa, "s_barrier"), 0);
}

// MFMA on gfx942, one candidate per intrinsic and operand type: the disassembled code object holds
// the planned instruction, as many per K step of the block loop as the plan says (block tile /
// intrinsic tile x K chunk / intrinsic K, over the waves), and no FMA inner loop; the metadata
// pass pre-flight (AGPRs reported).
TEST(GpuCodegen, Gfx942MfmaCodeObjects) {
  struct Case {
    std::string key, knobs, mnemonic;
  };
  const std::vector<Case> cases = {
      {"gemm:NN:256x256x256:f16*f16->f32",
       "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0",
       "v_mfma_f32_32x32x8_f16"},
      {"gemm:NN:256x256x256:f16*f16->f32",
       "block_m=64,block_n=128,block_k=32,mma=2,warp_m=32,warp_n=64,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0",
       "v_mfma_f32_16x16x16_f16"},
      {"gemm:NT:256x256x256:bf16*bf16->f32",
       "block_m=128,block_n=64,block_k=32,mma=1,warp_m=64,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0",
       "v_mfma_f32_32x32x8_bf16"},
      {"gemm:TN:256x256x256:bf16*bf16->f32",
       "block_m=64,block_n=64,block_k=64,mma=2,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0",
       "v_mfma_f32_16x16x16_bf16"},
  };
  auto g = gpuTargetInfo(*resolveTarget("mi300"));
  for (const auto& c : cases) {
    Built b = build("mi300", c.key, c.knobs);
    ASSERT_TRUE(b.out.ok) << c.knobs << ": " << b.out.stage << ": " << b.out.message.substr(0, 2000);
    const GpuPlan& p = b.plan;
    ASSERT_EQ(p.mfma.name(), c.mnemonic);
    std::string isa = gfx942Disassembly(b);
    // Per wave and K chunk: (warp_m / m) x (warp_n / n) tiles x (block_k / k) steps; the K loop over
    // 256 / block_k chunks may be unrolled, so the whole kernel holds a multiple of it.
    const int64_t per_chunk = (p.warp_m / p.mfma.m) * (p.warp_n / p.mfma.n) * (p.block_k / p.mfma.k);
    const int64_t n = count(isa, c.mnemonic + " ");
    EXPECT_GT(n, 0) << c.knobs;
    EXPECT_EQ(n % per_chunk, 0) << c.knobs << ": " << n << " MFMAs, " << per_chunk << " per K chunk";
    EXPECT_LE(n, per_chunk * (256 / p.block_k)) << c.knobs;
    EXPECT_EQ(count(isa, "v_mfma"), n) << "another MFMA form than planned";
    EXPECT_EQ(count(isa, "v_fma_mix") + count(isa, "v_pk_fma") + count(isa, "v_fmac_f32"), 0) << c.knobs;
    ASSERT_TRUE(b.info.stats.count("agpr_count"));
    GpuResources r = fromAmdgpuMetadata(b.info.stats);
    EXPECT_GE(r.agprs, 0);
    EXPECT_TRUE(preflightCheck(*g, r, p.threads).ok);
  }
  // lds_k_major: the strided operand (B in NN, A in TN) is stored with K innermost, so every
  // operand read of the kernel is one 64-bit LDS load and none is a 16-bit one.
  for (const char* key : {"gemm:NN:256x256x256:f16*f16->f32", "gemm:TN:256x256x256:bf16*bf16->f32"}) {
    const std::string knobs =
        "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0";
    Built plain = build("mi300", key, knobs), kmajor = build("mi300", key, knobs + ",lds_k_major=1");
    ASSERT_TRUE(plain.out.ok && kmajor.out.ok) << kmajor.out.message.substr(0, 2000);
    std::string a = gfx942Disassembly(plain), k = gfx942Disassembly(kmajor);
    EXPECT_GT(count(a, "ds_read_u16"), 0) << key;
    EXPECT_EQ(count(k, "ds_read_u16"), 0) << key;
    // The same MFMAs per K chunk (4 here); LLVM may unroll the K loop differently.
    EXPECT_GT(count(k, "v_mfma"), 0) << key;
    EXPECT_EQ(count(k, "v_mfma") % 4, 0) << key;
  }
  // lds_pad: the code object's LDS is the planned, padded size (rows of 32 + 4 halves).
  {
    const std::string knobs =
        "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,"
        "swizzle=0,lds_k_major=1,lds_pad=1";
    Built b = build("mi300", "gemm:NN:256x256x256:f16*f16->f32", knobs);
    ASSERT_TRUE(b.out.ok) << b.out.message.substr(0, 2000);
    EXPECT_EQ(b.plan.smem_bytes, 2 * 64 * (32 + 4) * 2);
    EXPECT_EQ(b.info.stats.at("group_segment_fixed_size"), b.plan.smem_bytes);
  }
  // pipeline = 2 (double-buffered LDS): twice the LDS in the code object, the same MFMAs, and in
  // the K loop the next tile's global loads come before the MFMAs and its LDS stores after them,
  // with one barrier per iteration instead of two or more.
  {
    const std::string knobs =
        "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,swizzle=0";
    Built one = build("mi300", "gemm:NN:256x256x256:f16*f16->f32", knobs + ",pipeline=1"),
          two = build("mi300", "gemm:NN:256x256x256:f16*f16->f32", knobs + ",pipeline=2");
    ASSERT_TRUE(one.out.ok && two.out.ok) << two.out.message.substr(0, 2000);
    EXPECT_EQ(two.info.stats.at("group_segment_fixed_size"), 2 * one.info.stats.at("group_segment_fixed_size"));
    // The scheduled IR's K loop: global loads (of the next tile), MFMAs, LDS stores, one barrier.
    std::string loop1 = forBody(one.info.scheduled_ir), loop2 = forBody(two.info.scheduled_ir);
    EXPECT_GE(count(loop1, "gpu.barrier"), 2) << loop1;
    EXPECT_EQ(count(loop2, "gpu.barrier"), 1) << loop2;
    EXPECT_LT(loop2.find("vector.load %arg"), loop2.find("amdgpu.mfma")) << loop2;
    EXPECT_GT(loop2.rfind("vector.store"), loop2.rfind("amdgpu.mfma")) << loop2;
    EXPECT_LT(loop1.find("vector.store"), loop1.find("amdgpu.mfma")) << "single buffer: stored, then read";
    // The code object: LLVM unrolls this K loop (8 steps) and interleaves, but no instruction
    // crosses a barrier: each stretch between barriers with MFMAs also loads the next tile from
    // global memory and stores it to LDS (the last step's may be folded away).
    std::string isa2 = gfx942Disassembly(two);
    EXPECT_EQ(count(isa2, "v_mfma") % 4, 0);
    auto [stretches, overlapped] = mfmaStretchesWithCopies(isa2);
    EXPECT_GE(stretches, 1);
    EXPECT_GE(overlapped, std::max(1, stretches - 1)) << isa2;
  }
  // Pre-flight with AGPRs: past the 512 unified registers a lane has, rejected with the reason.
  GpuResources r;
  r.registers = 520, r.agprs = 256, r.smem_bytes = 16384;
  Preflight pf = preflightCheck(*g, r, 256);
  EXPECT_FALSE(pf.ok);
  EXPECT_NE(pf.reason.find("256 of them AGPRs"), std::string::npos) << pf.reason;
}

TEST(GpuResources, PreflightRejectsWhatCannotRun) {
  auto g = gpuTargetInfo(*resolveTarget("h100"));
  ASSERT_TRUE(g.ok());
  GpuResources r;
  r.registers = 128, r.smem_bytes = 48 * 1024;
  EXPECT_TRUE(preflightCheck(*g, r, 256).ok);
  r.registers = 300;
  EXPECT_FALSE(preflightCheck(*g, r, 256).ok);
  r.registers = 64, r.smem_bytes = 64 * 1024;  // static shared memory above 48 KiB
  EXPECT_NE(preflightCheck(*g, r, 256).reason.find("shared memory"), std::string::npos);
  r.smem_bytes = 0;
  EXPECT_FALSE(preflightCheck(*g, r, 2048).ok);
  // 255 registers x 1024 threads exceed the 64K-register file: no block fits.
  r.registers = 255;
  Preflight p = preflightCheck(*g, r, 1024);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.occupancy.limiter, "registers");
  GpuResources parsed = parsePtxasOutput(
      "ptxas info    : Used 123 registers, used 1 barriers, 49152 bytes smem\n"
      "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n");
  EXPECT_EQ(parsed.registers, 123);
  EXPECT_EQ(parsed.smem_bytes, 49152);
  EXPECT_EQ(parsed.spill_bytes, 8);
  EXPECT_EQ(ptxSharedBytes(".shared .align 16 .b8 __wg_0[16384];\n.shared .align 4 .f32 x[4][8];"), 16384 + 128);
}

TEST(GpuCodegen, TensorCoresWithoutPipelineAndSwizzledOnSm80) {
  Built plain = build("a100", "gemm:NN:256x256x128:f16*f16->f32",
                      "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,"
                      "copy_bits=128,pipeline=1,swizzle=0");
  ASSERT_TRUE(plain.out.ok) << plain.out.stage << ": " << plain.out.message;
  EXPECT_GT(count(plain.object, "mma.sync.aligned.m16n8k16"), 0);
  EXPECT_EQ(count(plain.object, "cp.async"), 0);
  checkPtxas(plain, "sm_80");
  Built swz = build("a100", "gemm:NN:256x256x128:f16*f16->f32",
                    "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,"
                    "copy_bits=128,pipeline=2,swizzle=1");
  ASSERT_TRUE(swz.out.ok) << swz.out.stage << ": " << swz.out.message;
  // The XOR swizzle shows up as xor instructions in the shared-memory address arithmetic.
  EXPECT_GT(count(swz.object, "xor.b"), count(plain.object, "xor.b"));
  checkPtxas(swz, "sm_80");
}

TEST(GpuSpace, EveryDtypeAndLayoutHasCandidatesAndTheKnobsMeanWhatTheySay) {
  auto h100 = *gpuTargetInfo(*resolveTarget("h100"));
  auto mi300 = *gpuTargetInfo(*resolveTarget("mi300"));
  for (const char* key : {"gemm:NN:4096x4096x4096:f16*f16->f32", "gemm:NT:4096x4096x4096:bf16*bf16->f32",
                          "gemm:TN:128x11008x4096:f32*f32->f32", "gemm:NN:16x4096x4096:f16*f16->f32"}) {
    auto w = *parseWorkloadKey(key);
    for (const auto* g : {&h100, &mi300}) {
      Space s = buildGpuGemmSpace(w, *g);
      EXPECT_GT(s.size(), 50u) << key << " " << g->target.name;
      std::mt19937_64 rng(1);
      for (int i = 0; i < 200; ++i) {
        Candidate c = s.sample(rng);
        auto p = planGpuGemm(w, s, c);
        ASSERT_TRUE(p.ok());
        EXPECT_LE(p->threads, g->max_threads_per_block);
        EXPECT_EQ(p->threads % g->warp_size, 0);
        EXPECT_LE(p->smem_bytes, g->target.kind == TargetKind::Nvidia ? g->smem_per_block_bytes : g->smem_per_block_static_bytes);
        EXPECT_EQ(p->dynamic_smem, g->target.kind == TargetKind::Nvidia && (p->smem_bytes > 48 * 1024 || p->wgmma));
        EXPECT_EQ(p->grid[0] * p->block_n, w.n);
        EXPECT_EQ(p->grid[1] * p->block_m, w.m);
        if (g->target.kind == TargetKind::Nvidia) {
          if (p->mma) {
            EXPECT_TRUE(g->has_mma_sync && (w.a_type == DType::F16 || w.a_type == DType::BF16));
          }
          if (p->wgmma) {
            EXPECT_TRUE(g->has_wgmma && p->block_k == 64 && p->threads % 128 == 0 && p->dynamic_smem) << key;
          }
        } else {
          // gfx942: every f16/bf16 candidate uses the matrix cores, f32 the FMA route.
          EXPECT_EQ(p->mma, w.a_type != DType::F32) << key;
          EXPECT_EQ(p->mfma.m > 0, p->mma);
          if (p->mma) {
            EXPECT_TRUE(p->warp_m % p->mfma.m == 0 && p->warp_n % p->mfma.n == 0);
            EXPECT_LE(p->threads, 8 * 64);
          }
        }
        if (p->pipeline > 1) {  // cp.async pipelines on NVIDIA; double-buffered LDS with MFMA on gfx942
          EXPECT_TRUE(g->has_cp_async || (p->mfma.m > 0 && p->pipeline == 2)) << key;
        }
      }
    }
  }
  // Tensor cores for bf16 on NVIDIA (our retyping, compiler_bf16_mma.cpp) and MFMA on gfx942.
  auto bf = *parseWorkloadKey("gemm:NN:1024x1024x1024:bf16*bf16->f32");
  EXPECT_EQ(buildGpuGemmSpace(bf, h100).knobs()[3].values, (std::vector<int64_t>{0, 1, 2}));  // 2: wgmma (sm_90)
  EXPECT_EQ(buildGpuGemmSpace(bf, *gpuTargetInfo(*resolveTarget("a100"))).knobs()[3].values, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(buildGpuGemmSpace(bf, mi300).knobs()[3].values, (std::vector<int64_t>{1, 2}));
  // Sizes that are not multiples of 16 leave no valid schedule.
  auto odd = *parseWorkloadKey("gemm:NN:1000x1000x1000:f16*f16->f32");
  EXPECT_EQ(buildGpuGemmSpace(odd, h100).size(), 0u);
  // Copy mapping as MLIR computes it (recipe figures): 128x32 f16 over 256 threads -> [2, 8].
  EXPECT_EQ(*gpuCopyTile(128, 32, 16, 256, 128), (std::array<int64_t, 2>{2, 8}));
  EXPECT_EQ(*gpuCopyTile(128, 32, 16, 128, 128), (std::array<int64_t, 2>{4, 8}));
  EXPECT_FALSE(gpuCopyTile(16, 8, 16, 256, 128).ok());  // too small for 256 threads
}

// A GPU Transform library (library.h) applied to the workload's own payload must produce the
// kernel the tuner compiled and measured: the same PTX, byte for byte (the same HSACO metadata on
// AMD). Covers tensor cores with and without a cp.async pipeline (depth 2 and 3), the swizzle,
// FMA with and without pipelining, f32, NT, and gfx942.
TEST(GpuLibrary, LibraryKernelIsTheTunedKernel) {
  struct Case {
    std::string target, key;
    int samples;
  };
  const std::vector<Case> cases = {{"h100", "gemm:NN:256x256x128:f16*f16->f32", 10},
                                   {"a100", "gemm:NT:128x128x64:f16*f16->f32", 3},
                                   {"h100", "gemm:NN:128x128x64:f32*f32->f32", 3},
                                   {"mi300", "gemm:NN:128x256x64:f16*f16->f32", 3}};
  std::set<std::string> seen;  // knob features covered
  for (const auto& cs : cases) {
    auto t = *resolveTarget(cs.target);
    auto g = *gpuTargetInfo(t);
    auto w = *parseWorkloadKey(cs.key);
    Space s = buildGpuGemmSpace(w, g);
    std::mt19937_64 rng(7);
    for (int i = 0; i < cs.samples; ++i) {
      Candidate c = s.sample(rng);
      const std::string knobs = s.keyOf(c);
      Built direct = build(cs.target, cs.key, knobs);
      if (!direct.out.ok) continue;  // a compile failure of the tuner's own path is not this test's subject
      const GpuPlan& p = direct.plan;
      seen.insert(std::string(p.mma ? "mma" : "fma") + "-pipeline" + std::to_string(p.pipeline) +
                  (p.swizzle ? "-swizzle" : ""));
      LibraryEntry e{w, s, c, "tuned", 0,
                     t.kind == TargetKind::Nvidia ? LibraryEntry::Kind::Nvidia : LibraryEntry::Kind::Amd,
                     {{"record", "1"}}, {}};
      auto lib = emitTransformLibrary({e}, "test");
      ASSERT_TRUE(lib.ok()) << lib.error();
      ASSERT_TRUE(validateTransformLibrary(*lib).ok());
      GpuModuleRequest r;
      r.nvidia = t.kind == TargetKind::Nvidia;
      r.chip = g.chip;
      r.features = g.features;
      r.out_path = tmpPath("module.mlir");
      std::vector<GpuModuleKernel> kernels;
      CompileOutcome out = compileModuleGpu(w.payloadMlir(), *lib, r, kernels);
      ASSERT_TRUE(out.ok) << knobs << ": " << out.stage << ": " << out.message.substr(0, 3000);
      ASSERT_EQ(kernels.size(), 1u);
      EXPECT_EQ(kernels[0].block[0] * kernels[0].block[1] * kernels[0].block[2], p.threads) << knobs;
      EXPECT_EQ(kernels[0].grid[0], direct.info.grid[0]) << knobs;
      EXPECT_EQ(kernels[0].grid[1], direct.info.grid[1]) << knobs;
      if (r.nvidia)
        EXPECT_EQ(kernels[0].object, direct.object) << cs.target << " " << knobs;
      else
        EXPECT_EQ(kernels[0].stats, direct.info.stats) << cs.target << " " << knobs;
      std::filesystem::remove(r.out_path);
    }
  }
  // The sample must have exercised the interesting paths.
  bool mma_pipe = false, fma = false;
  for (const auto& k : seen) {
    mma_pipe |= k.rfind("mma-pipeline2", 0) == 0 || k.rfind("mma-pipeline3", 0) == 0;
    fma |= k.rfind("fma", 0) == 0;
  }
  EXPECT_TRUE(mma_pipe && fma) << "sampled: " << seen.size() << " kinds";
}
