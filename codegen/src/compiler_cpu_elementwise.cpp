// The untuned rest of an imported network on the CPU (issue #32): every linalg.generic on tensors
// that is left once the library has scheduled the tunable ops (bias, activation, residual add,
// batch norm after linalg-fuse-elementwise-ops; global pools, reductions) is vectorized along its
// last parallel loop instead of becoming scalar loops: that loop is the innermost one (reductions
// along the innermost dimension stay scalar), tiled by 16, 8, 4 or 2 elements (whichever divides
// it), every other loop by 1, and the tile vectorized. Ops whose last parallel dimension is odd,
// and ops with math that only libm has, stay as they are; erf, tanh and exp become MLIR's
// polynomial approximations first (the BERT layer's GELU output still matches PyTorch's within
// tune model --check's 1e-3). NHWC pools go by output rows (decomposed to 1-D pools, vectorized as
// the direct convolution route's are); constant pads become fills of their border and a copy into
// the interior, and fills with anything but zero generics, vectorized the same way (a kernel's own
// pad is, in every compile); strided slices outside the tuned ops become vectorized copies. On
// more than one thread, each op at a function's top level with enough work is first split among
// the threads along its outermost parallel loop that the thread count divides (an scf.forall,
// which becomes an OpenMP loop like the tuned ops' own); reductions along the innermost dimension
// (softmax, layer norm) are split by rows that way too.
#include "compiler_internal.h"

#include <algorithm>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace sextant::detail {

using namespace mlir;

namespace {

// Below this many iterations an op stays on one thread: a parallel region costs a few
// microseconds of fork and join.
constexpr int64_t kMinParallelWork = 16384;

// Splits g (a generic op or a pool) among `threads` along its outermost parallel loop that they
// divide (an scf.forall of `threads` blocks); the op inside, or g itself when it is not split.
linalg::LinalgOp splitAmongThreads(IRRewriter& rewriter, linalg::LinalgOp g, int threads) {
  if (threads <= 1 || g->getParentOfType<LoopLikeOpInterface>()) return g;  // already in a loop
  const SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  int64_t work = 1;
  for (int64_t d : ranges) work *= d;
  if (work < kMinParallelWork) return g;
  const auto iters = g.getIteratorTypesArray();
  int dim = -1;
  for (size_t i = 0; i < iters.size() && dim < 0; ++i)
    if (iters[i] == utils::IteratorType::parallel && ranges[i] >= threads && ranges[i] % threads == 0) dim = int(i);
  if (dim < 0) return g;
  SmallVector<OpFoldResult> sizes(ranges.size(), rewriter.getIndexAttr(0));
  sizes[size_t(dim)] = rewriter.getIndexAttr(ranges[size_t(dim)] / threads);
  scf::SCFTilingOptions opts;
  opts.setTileSizes(sizes);
  opts.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  rewriter.setInsertionPoint(g);
  auto tiled = scf::tileUsingSCF(rewriter, cast<TilingInterface>(g.getOperation()), opts);
  if (failed(tiled) || tiled->tiledOps.size() != 1) return g;
  auto inner = dyn_cast<linalg::LinalgOp>(tiled->tiledOps.front());
  if (!inner) return g;
  rewriter.replaceOp(g, tiled->replacements);
  return inner;
}

// An NHWC pool (static shapes, channels a multiple of 2) tiled by (1, 1, columns, vc, 1, whole
// window row), the tile decomposed to a 1-D pool and vectorized; false (nothing changed) when the
// shape does not allow it.
bool vectorizePoolByRows(IRRewriter& rewriter, linalg::LinalgOp p, int threads) {
  const SmallVector<int64_t> r = p.getStaticLoopRanges();  // n, oh, ow, c, kh, kw
  if (r.size() != 6 || llvm::any_of(r, [](int64_t d) { return ShapedType::isDynamic(d); })) return false;
  int64_t vc = 0, tw = 1;
  for (int64_t v : {16, 8, 4, 2})
    if (vc == 0 && r[3] % v == 0) vc = v;
  for (int64_t v : {8, 7, 4, 2})
    if (tw == 1 && r[2] % v == 0) tw = v;
  if (vc == 0) return false;
  // The batch or output rows shared among the threads first (an scf.forall, an OpenMP loop).
  Operation* op = splitAmongThreads(rewriter, p, threads).getOperation();
  scf::SCFTilingOptions opts;
  opts.setTileSizes({rewriter.getIndexAttr(1), rewriter.getIndexAttr(1), rewriter.getIndexAttr(tw),
                     rewriter.getIndexAttr(vc), rewriter.getIndexAttr(1), rewriter.getIndexAttr(0)});
  rewriter.setInsertionPoint(op);
  auto tiled = scf::tileUsingSCF(rewriter, cast<TilingInterface>(op), opts);
  if (failed(tiled) || tiled->tiledOps.size() != 1 || tiled->loops.empty()) return false;
  rewriter.replaceOp(op, tiled->replacements);
  Operation* inner = tiled->tiledOps.front();
  Operation* nest = tiled->loops.front();
  RewritePatternSet decompose(rewriter.getContext());
  linalg::populateDecomposeConvolutionPatterns(decompose);
  (void)applyOpPatternsGreedily(ArrayRef<Operation*>{inner}, std::move(decompose));
  SmallVector<linalg::LinalgOp> rows;
  nest->walk([&](linalg::LinalgOp o) {
    if (isa<linalg::PoolingNwcMaxOp, linalg::PoolingNwcSumOp>(o.getOperation())) rows.push_back(o);
  });
  for (linalg::LinalgOp o : rows) {
    rewriter.setInsertionPoint(o);
    auto v = linalg::vectorize(rewriter, o);
    if (succeeded(v)) rewriter.replaceOp(o, v->replacements);
  }
  return true;  // tiled, and vectorized where MLIR could; correct either way
}

// A generic op vectorized along its last parallel loop: split among the threads first (see
// splitAmongThreads); for a pool (`pool`), its window loops moved before that loop; then tiled by
// 16, 8, 4 or 2 along it (whichever divides it), every other loop by 1, and the tile vectorized.
// How many tiles were vectorized (0: the op is left as it was, or tiled but scalar).
int vectorizeAlongLastLoop(IRRewriter& rewriter, linalg::GenericOp g, int threads, bool pool) {
  g = cast<linalg::GenericOp>(splitAmongThreads(rewriter, g, threads).getOperation());
  const auto iters = g.getIteratorTypesArray();
  int last = -1;
  for (int i = int(iters.size()) - 1; i >= 0 && last < 0; --i)
    if (iters[size_t(i)] == utils::IteratorType::parallel) last = i;
  if (last != int(iters.size()) - 1) {  // the reductions before the vector loop
    // Only for pools: a reduction along the innermost dimension (softmax, layer norm) would read
    // its rows with a stride once vectorized across them.
    if (!pool) return 0;
    SmallVector<unsigned> order;
    for (unsigned i = 0; i < iters.size(); ++i)
      if (int(i) != last) order.push_back(i);
    order.push_back(unsigned(last));
    rewriter.setInsertionPoint(g);
    auto swapped = linalg::interchangeGenericOp(rewriter, g, order);
    if (failed(swapped)) return 0;
    g = *swapped;
  }
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  int64_t vec = 0;
  for (int64_t v : {16, 8, 4, 2})
    if (vec == 0 && ranges.back() % v == 0) vec = v;
  if (vec == 0) return 0;
  SmallVector<OpFoldResult> sizes(ranges.size(), rewriter.getIndexAttr(1));
  sizes.back() = rewriter.getIndexAttr(vec);
  scf::SCFTilingOptions opts;
  opts.setTileSizes(sizes);
  rewriter.setInsertionPoint(g);
  auto tiled = scf::tileUsingSCF(rewriter, cast<TilingInterface>(g.getOperation()), opts);
  if (failed(tiled)) return 0;
  rewriter.replaceOp(g, tiled->replacements);
  int done = 0;
  for (Operation* t : tiled->tiledOps) {
    rewriter.setInsertionPoint(t);
    auto v = linalg::vectorize(rewriter, t);
    if (failed(v)) continue;
    rewriter.replaceOp(t, v->replacements);
    ++done;
  }
  return done;
}

// The parts of a decomposed pad (decomposePad) carry this attribute until they are vectorized.
constexpr const char* kPadPart = "sextant.pad_part";

// A pad's fill or copy as a generic op marked as a pad part (which vectorizeAlongLastLoop then
// vectorizes), or as it is when it cannot be generalized.
Value asPadPart(IRRewriter& rewriter, Operation* op) {
  auto g = linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(op));
  if (failed(g)) return op->getResult(0);
  (*g)->setAttr(kPadPart, rewriter.getUnitAttr());
  return g->getResult(0);
}

// A constant pad as fills of its border only (one slab per padded side of each dimension, the
// dimensions before it restricted to the interior) and a copy of the input into the interior, all
// generic ops that vectorizeElementwise vectorizes. Bufferized as tensor.pad, it became a scalar
// fill of the whole padded tensor and a copy that LLVM vectorized with scatters: ResNet-50's
// max-pool pad (3.2 MB) took 0.39 ms (Zen 5, 1 thread), its zero-padded depthwise convolutions
// in MobileNetV2 a memset of every padded input.
void decomposePad(IRRewriter& rewriter, tensor::PadOp p) {
  rewriter.setInsertionPoint(p);
  const Location loc = p.getLoc();
  const auto type = p.getResultType();
  const ArrayRef<int64_t> src = p.getSourceType().getShape(), full = type.getShape();
  const SmallVector<int64_t> low(p.getStaticLow()), high(p.getStaticHigh());
  const int64_t rank = type.getRank();
  Value padded = tensor::EmptyOp::create(rewriter, loc, full, type.getElementType());
  auto slab = [&](int64_t d, bool lowSide) -> std::pair<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>> {
    SmallVector<OpFoldResult> off, size;
    for (int64_t j = 0; j < rank; ++j) {
      int64_t o = 0, n = full[size_t(j)];
      if (j < d) o = low[size_t(j)], n = src[size_t(j)];
      if (j == d) o = lowSide ? 0 : low[size_t(j)] + src[size_t(j)], n = lowSide ? low[size_t(j)] : high[size_t(j)];
      off.push_back(rewriter.getIndexAttr(o));
      size.push_back(rewriter.getIndexAttr(n));
    }
    return {off, size};
  };
  const SmallVector<OpFoldResult> ones(size_t(rank), rewriter.getIndexAttr(1));
  for (int64_t d = 0; d < rank; ++d)
    for (bool lowSide : {true, false}) {
      if ((lowSide ? low : high)[size_t(d)] == 0) continue;
      auto [off, size] = slab(d, lowSide);
      Value part = tensor::ExtractSliceOp::create(rewriter, loc, padded, off, size, ones);
      Value filled = asPadPart(rewriter, linalg::FillOp::create(rewriter, loc, p.getConstantPaddingValue(), part));
      padded = tensor::InsertSliceOp::create(rewriter, loc, filled, padded, off, size, ones);
    }
  SmallVector<OpFoldResult> off, size;
  for (int64_t j = 0; j < rank; ++j) {
    off.push_back(rewriter.getIndexAttr(low[size_t(j)]));
    size.push_back(rewriter.getIndexAttr(src[size_t(j)]));
  }
  Value interior = tensor::ExtractSliceOp::create(rewriter, loc, padded, off, size, ones);
  Value copied = asPadPart(rewriter, linalg::CopyOp::create(rewriter, loc, p.getSource(), interior));
  rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(p, copied, padded, off, size, ones);
}

}  // namespace

int vectorizeElementwise(ModuleOp m, int threads, bool network) {
  IRRewriter rewriter(m.getContext());
  // Pads with a constant (a convolution's zeros, a max pool's -inf): decomposePad. Kernels pad
  // their input too (a tuned convolution's payload): for them only the pads' parts are vectorized
  // (Zen 5, 1 thread, the default schedules: depthwise 3x3 32 channels at 112x112 48 -> 60
  // GFLOP/s, its 3x3/2 96-channel layer 20.5 -> 23.7, the 3x3 64-channel layer at 56x56 244-255
  // -> 259-262).
  {
    SmallVector<tensor::PadOp> pads;
    m.walk([&](tensor::PadOp p) {
      if (p.getConstantPaddingValue() && p.getSourceType().hasStaticShape() && p.getResultType().hasStaticShape() &&
          !ShapedType::isDynamicShape(p.getStaticLow()) && !ShapedType::isDynamicShape(p.getStaticHigh()))
        pads.push_back(p);
    });
    for (tensor::PadOp p : pads) decomposePad(rewriter, p);
  }
  if (!network) {
    int done = 0;
    SmallVector<linalg::GenericOp> parts;
    m.walk([&](linalg::GenericOp g) {
      if (g->hasAttr(kPadPart)) parts.push_back(g);
    });
    for (linalg::GenericOp g : parts) done += vectorizeAlongLastLoop(rewriter, g, threads, false);
    return done;
  }
  // erf, tanh and exp (GELU, activations, softmax) as MLIR's polynomial approximations (plain
  // arithmetic, which vectorizes) instead of libm calls, one element at a time (LLVM has no vector
  // exp either: llvm.exp on a vector becomes one expf call per lane).
  {
    RewritePatternSet approx(m.getContext());
    // The predicate sees the op's full name ("math.erf"): compared with "erf" alone, as it was until
    // 2026-11-26, nothing was approximated and GELU's erf stayed one libm call per element.
    populateMathPolynomialApproximationPatterns(approx, [](StringRef name) {
      name.consume_front("math.");
      return name == "erf" || name == "tanh" || name == "exp";
    });
    // Only these patterns: the greedy driver's own folding and region simplification would also
    // fold the schedules' vectorized panel copies (pack_a / pack_b: a transfer_read written into
    // the panel) back into slice insertions, which bufferize to strided memref copies lowered to
    // scalar loops. Until 2026-11-26 every packed panel of a network's GEMMs was copied one float
    // at a time so (the tuner's kernels, compiled without this step, were not).
    GreedyRewriteConfig config;
    config.enableFolding(false);
    config.enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    (void)applyPatternsGreedily(m, std::move(approx), config);
  }
  // Fills with anything but zero (a max pool's -inf init) as generics, vectorized below; LLVM
  // vectorized their loops with scatters across the rows. Zero fills stay: they become memset,
  // whose full-line writes beat vector stores on an output not in the caches.
  {
    SmallVector<linalg::FillOp> fills;
    m.walk([&](linalg::FillOp f) {
      if (f.hasPureTensorSemantics() && !matchPattern(f.value(), m_AnyZeroFloat()) && !matchPattern(f.value(), m_Zero()))
        fills.push_back(f);
    });
    for (linalg::FillOp f : fills) {
      rewriter.setInsertionPoint(f);
      (void)linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(f.getOperation()));
    }
  }
  // Strided slices outside the tuned ops' loops (a strided 1x1 convolution's pixels, gathered by
  // the importer before its GEMM reads them as a matrix) become copies, vectorized below along
  // their last dimension: bufferization made them strided memref copies, lowered to scalar loops
  // (ResNet-50's layer4 downsample spent a quarter of its time in one).
  {
    SmallVector<tensor::ExtractSliceOp> strided;
    m.walk([&](tensor::ExtractSliceOp s) {
      auto strides = s.getStaticStrides();
      if (!s->getParentOfType<LoopLikeOpInterface>() && s.getResultType().hasStaticShape() &&
          !ShapedType::isDynamicShape(strides) && llvm::any_of(strides, [](int64_t x) { return x != 1; }))
        strided.push_back(s);
    });
    for (tensor::ExtractSliceOp s : strided) {
      rewriter.setInsertionPointAfter(s);
      auto type = s.getResultType();
      Value empty = tensor::EmptyOp::create(rewriter, s.getLoc(), type.getShape(), type.getElementType());
      auto copy = linalg::CopyOp::create(rewriter, s.getLoc(), ValueRange{s.getResult()}, ValueRange{empty});
      rewriter.replaceAllUsesExcept(s.getResult(), copy.getResult(0), copy);
      rewriter.setInsertionPoint(copy);
      (void)linalg::generalizeNamedOp(rewriter, cast<linalg::LinalgOp>(copy.getOperation()));
    }
  }
  SmallVector<linalg::LinalgOp> pools;
  m.walk([&](linalg::LinalgOp op) {
    if (isa<linalg::PoolingNhwcMaxOp, linalg::PoolingNhwcSumOp>(op.getOperation()) && op.hasPureTensorSemantics())
      pools.push_back(op);
  });
  int done = 0;
  // Pools the way the direct convolution route goes: one output row, a few columns and 16 channels
  // at a time, each window row a 1-D pool that MLIR's convolution vectorizer turns into vector
  // maxima along the channels. The generalized form below failed to vectorize for strided windows
  // and stayed scalar, which LLVM then vectorized with scatters: ResNet-50's 3x3/2 max pool took
  // 1.54 ms of its 38 ms (Zen 5, 1 thread).
  pools.erase(std::remove_if(pools.begin(), pools.end(), [&](linalg::LinalgOp p) {
                if (vectorizePoolByRows(rewriter, p, threads)) {
                  ++done;
                  return true;
                }
                return false;
              }),
              pools.end());
  llvm::SmallPtrSet<Operation*, 16> generalized;  // pools: their window loops move before the channel loop
  for (linalg::LinalgOp p : pools) {
    rewriter.setInsertionPoint(p);
    if (auto g = linalg::generalizeNamedOp(rewriter, p); succeeded(g)) generalized.insert(g->getOperation());
  }
  SmallVector<linalg::GenericOp> ops;
  m.walk([&](linalg::GenericOp g) {
    if (!g.hasPureTensorSemantics() || g.getNumLoops() == 0 || g.getNumParallelLoops() == 0) return;
    // Math that becomes a libm call (erf, tanh, powf) stays scalar: libm has no n-D vector form.
    bool libm = false;
    g.getBody()->walk([&](Operation* op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "math" &&
          !isa<math::ExpOp, math::LogOp, math::SqrtOp, math::RsqrtOp, math::AbsFOp, math::FmaOp, math::CopySignOp>(op))
        libm = true;
    });
    if (libm) return;
    auto ranges = g.getStaticLoopRanges();
    if (llvm::any_of(ranges, [](int64_t d) { return ShapedType::isDynamic(d); })) return;
    ops.push_back(g);
  });
  for (linalg::GenericOp g : ops) done += vectorizeAlongLastLoop(rewriter, g, threads, generalized.contains(g.getOperation()));
  return done;
}

}  // namespace sextant::detail
