// Every CPU route's schedule, put in a Transform library the way `tune compile` and `tune model` put
// it (with the fused-epilogue variant beside the op-only one), is a library stock mlir-opt parses
// and verifies. A library is one module: a handle name that one route's actions define and the
// library's own sequence also uses made the whole library unparsable, and with it every module
// that had such a GEMM (the split-K GEMV route's %fill, 2026-11-29). Random points of each space,
// on 1 and 2 threads, the default among them.
#include <fstream>
#include <gtest/gtest.h>
#include <random>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/library.h"
#include "sextant/codegen/workload.h"
#include "cpu_compile_helpers.h"
#include "test_cpus.h"

using namespace sextant;
using sextant::test::avx512;


TEST(LibraryParse, EveryRoutesLibraryWithItsEpilogueVariantParses) {
  const char* keys[] = {
      "gemm:NN:196x96x576:f32*f32->f32",              // GEMM route, peels, packing, loop orders
      "gemm:NN:3136x24x144:f32*f32->f32",             // the N peel
      "gemm:NT:128x256x512:f32*f32->f32",             // transposed-B route
      "gemm:TN:64x128x256:f32*f32->f32",
      "gemm:NT:1x1024x512:f32*f32->f32",              // GEMV route
      "gemm:NT:8x1024x512:f32*f32->f32",              // split-K GEMV route
      "batch_matmul:NT:4x64x64x32:f32*f32->f32",
      "conv2d:NHWC:mb1ic32ih14iw14oc64oh14ow14kh3kw3sh1sw1ph1pw1dh0dw0:f32*f32->f32",
      "conv2d:NHWC:mb1g32ic32ih14iw14oc32oh7ow7kh3kw3sh2sw2ph1pw1dh0dw0:f32*f32->f32",  // depthwise
  };
  const std::string path = test::tmpPath("library-parse.mlir");
  std::ofstream out(path);
  int libraries = 0;
  std::mt19937_64 rng(11);
  for (const char* key : keys) {
    auto w = parseWorkloadKey(key);
    ASSERT_TRUE(w.ok()) << key << ": " << w.error();
    for (int threads : {1, 2}) {
      const Space space = buildCpuGemmSpace(*w, avx512(), threads);
      std::vector<Candidate> cands = {defaultCpuCandidate(space, *w)};
      for (int i = 0; i < 12; ++i) cands.push_back(space.sample(rng));
      for (const Candidate& c : cands) {
        LibraryEntry e{*w, space, c, "tuned", w->batched() ? w->batch : 0, LibraryEntry::Kind::Cpu, {}, {}};
        auto lib = emitTransformLibrary({e}, std::string(key) + " " + space.keyOf(c), true);
        ASSERT_TRUE(lib.ok()) << key << " " << space.keyOf(c) << ": " << lib.error();
        out << "// " << key << ", " << threads << " thread(s): " << space.keyOf(c) << "\n" << *lib << "\n// -----\n";
        ++libraries;
      }
    }
  }
  out.close();
  // The epilogue variant exists for most of them (the test would prove little otherwise).
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t variants = 0;
  for (size_t p = text.find("@sextant_apply_epilogue_"); p != std::string::npos; p = text.find("@sextant_apply_epilogue_", p + 1))
    ++variants;
  EXPECT_GT(variants, size_t(libraries) / 2) << "libraries with an epilogue variant: " << variants << " of " << libraries;
  const std::string diag = test::commandOutput(std::string(SEXTANT_LLVM_TOOLS) + "/mlir-opt --split-input-file " + path +
                                               " -o /dev/null 2>&1; echo \"exit $?\"");
  const bool parsed = diag.size() >= 7 && diag.compare(diag.size() - 7, 7, "exit 0\n") == 0;
  EXPECT_TRUE(parsed) << diag.substr(0, 4000);
  if (parsed) std::remove(path.c_str());
}
