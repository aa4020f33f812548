// The AMX route (issue #37, amx_kernel.h): the pass "sextant-amx-gemm" that a CPU schedule applies
// (transform.apply_registered_pass) to the function holding one bf16 x bf16 -> f32 (or s8 x s8 -> s32)
// linalg.matmul
// (NN, or NT through its indexing maps; A, B, C its memref arguments): the function's body becomes
// the AMX kernel of amxKernelText, its packed-B buffer a private global of the module, and the
// module gets a constructor that asks Linux for the tile-data permission. The lowering then runs
// the AMX pipeline (compiler_cpu.cpp: the tile values carried through loops need the AMX type
// conversion of convert-to-llvm; an explicit dialect-by-dialect list fails on their branches).
#include "amx_kernel.h"
#include "compiler_internal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {

using namespace mlir;

namespace {

// The one linalg.matmul of `f` (bf16 x bf16 -> f32, or i8 x i8 -> i32 signed) as AmxParams' sizes,
// types and layout.
bool readMatmul(func::FuncOp f, AmxParams& p, std::string& err) {
  llvm::SmallVector<linalg::MatmulOp> mms;
  f.walk([&](linalg::MatmulOp m) { mms.push_back(m); });
  if (mms.size() != 1) {
    err = "sextant-amx-gemm: the function must hold exactly one linalg.matmul";
    return false;
  }
  linalg::MatmulOp mm = mms.front();
  auto maps = mm.getIndexingMapsArray();
  MLIRContext* ctx = f.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto map = [&](AffineExpr a, AffineExpr b) { return AffineMap::get(3, 0, {a, b}, ctx); };
  if (maps.size() != 3 || maps[0] != map(d(0), d(2)) || maps[2] != map(d(0), d(1))) {
    err = "sextant-amx-gemm: A must be M x K (layouts NN and NT)";
    return false;
  }
  if (maps[1] == map(d(1), d(2))) p.b_transposed = true;
  else if (maps[1] == map(d(2), d(1))) p.b_transposed = false;
  else {
    err = "sextant-amx-gemm: B must be K x N or N x K";
    return false;
  }
  if (f.getNumArguments() != 3 || f.getNumResults() != 0) {
    err = "sextant-amx-gemm: the function must be (A, B, C) -> ()";
    return false;
  }
  MemRefType t[3];
  for (unsigned i = 0; i < 3; ++i) {
    t[i] = llvm::dyn_cast<MemRefType>(f.getArgument(i).getType());
    if (!t[i] || !t[i].hasStaticShape() || !t[i].getLayout().isIdentity() || t[i].getRank() != 2) {
      err = "sextant-amx-gemm: A, B and C must be static, contiguous 2-D memrefs";
      return false;
    }
  }
  const bool bf16 = t[0].getElementType().isBF16() && t[1].getElementType().isBF16() && t[2].getElementType().isF32();
  const bool s8 = t[0].getElementType().isInteger(8) && t[1].getElementType().isInteger(8) &&
                  t[2].getElementType().isInteger(32);
  if (!bf16 && !s8) {
    err = "sextant-amx-gemm: expected bf16 A and B and an f32 C, or i8 A and B and an i32 C";
    return false;
  }
  // i8: linalg.matmul's default cast extends both as signed (s8 x s8, tdpbssd); an unsigned cast
  // would need tdpbusd / tdpbuud, which this pass does not write.
  if (s8 && mm.getCast() != linalg::TypeFn::cast_signed) {
    err = "sextant-amx-gemm: i8 operands must be signed (linalg.matmul's default cast)";
    return false;
  }
  p.int8 = s8;
  p.m = t[0].getDimSize(0), p.k = t[0].getDimSize(1);
  p.n = p.b_transposed ? t[1].getDimSize(0) : t[1].getDimSize(1);
  const int64_t bk = p.b_transposed ? t[1].getDimSize(1) : t[1].getDimSize(0);
  if (bk != p.k || t[2].getDimSize(0) != p.m || t[2].getDimSize(1) != p.n) {
    err = "sextant-amx-gemm: the operands' sizes do not agree";
    return false;
  }
  return true;
}

}  // namespace

bool rewriteFunctionToAmx(func::FuncOp f, const AmxParams& opts, std::string& err) {
  AmxParams p = opts;
  if (!readMatmul(f, p, err)) return false;
  if (auto s = checkAmxParams(p); !s) {
    err = s.error();
    return false;
  }
  auto parent = f->getParentOfType<ModuleOp>();
  if (!parent) {
    err = "sextant-amx-gemm: the function is not in a module";
    return false;
  }
  const std::string fname = f.getSymName().str();
  if (SymbolTable::lookupSymbolIn(parent, fname + "_amx_b") ||
      (p.b_packed && SymbolTable::lookupSymbolIn(parent, kAmxBTilesSymbol))) {
    err = "sextant-amx-gemm: @" + fname + "'s buffer or B-layout function exists already (one AMX GEMM per module)";
    return false;
  }
  DiagCollector diags(f.getContext());
  auto gen = parseSourceString<ModuleOp>(amxKernelText(p, fname), f.getContext(), "amx-kernel");
  if (!gen) {
    err = "sextant-amx-gemm: the generated kernel does not parse (a Sextant bug): " + diags.text;
    return false;
  }
  auto kernel = gen->lookupSymbol<func::FuncOp>(fname);
  f.getBody().takeBody(kernel.getBody());
  f->setAttr(kAmxAttr, UnitAttr::get(f.getContext()));
  // Threads: what compileModuleCpu reads to lower the scf.parallel loops onto OpenMP.
  if (p.threads > 1) f->setAttr("sextant.num_threads", IntegerAttr::get(IntegerType::get(f.getContext(), 64), p.threads));
  // The buffer, and (once per module) the permission's constructor.
  if (p.b_packed) gen->lookupSymbol<LLVM::LLVMFuncOp>(kAmxBTilesSymbol)->moveBefore(f);
  else gen->lookupSymbol<memref::GlobalOp>(fname + "_amx_b")->moveBefore(f);
  if (!SymbolTable::lookupSymbolIn(parent, "sextant_amx_permission")) {
    Block& body = parent.getBodyRegion().front();
    if (!SymbolTable::lookupSymbolIn(parent, "syscall")) gen->lookupSymbol<LLVM::LLVMFuncOp>("syscall")->moveBefore(&body, body.end());
    gen->lookupSymbol<LLVM::LLVMFuncOp>("sextant_amx_permission")->moveBefore(&body, body.end());
    for (Operation& op : llvm::make_early_inc_range(gen->getBody()->getOperations()))
      if (llvm::isa<LLVM::GlobalCtorsOp>(op)) op.moveBefore(&body, body.end());
  }
  return true;
}

bool moduleHasAmx(ModuleOp m) {
  bool has = false;
  m.walk([&](func::FuncOp f) {
    if (f->hasAttr(kAmxAttr)) has = true;
  });
  return has;
}

namespace {

struct AmxGemmPass : public PassWrapper<AmxGemmPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AmxGemmPass)
  AmxGemmPass() = default;
  AmxGemmPass(const AmxGemmPass& o) : PassWrapper(o) {}
  StringRef getArgument() const final { return "sextant-amx-gemm"; }
  StringRef getDescription() const final {
    return "Sextant: a bf16 or s8 GEMM function -> an Intel AMX kernel (B in VNNI tiles, tile products, "
           "accumulators in tile registers)";
  }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<arith::ArithDialect, memref::MemRefDialect, amx::AMXDialect, LLVM::LLVMDialect, scf::SCFDialect,
             vector::VectorDialect>();
  }
  Option<int64_t> block_m{*this, "block-m", llvm::cl::desc("rows of C per cache block"), llvm::cl::init(32)};
  Option<int64_t> block_n{*this, "block-n", llvm::cl::desc("columns of C per cache block"), llvm::cl::init(32)};
  Option<int64_t> block_k{*this, "block-k", llvm::cl::desc("K per cache block (whole tiles: 32 bf16 or 64 s8 values)"), llvm::cl::init(256)};
  Option<int64_t> tiles_m{*this, "tiles-m", llvm::cl::desc("16-row accumulator tiles per register block"), llvm::cl::init(2)};
  Option<int64_t> tiles_n{*this, "tiles-n", llvm::cl::desc("16-column accumulator tiles per register block"),
                          llvm::cl::init(2)};
  Option<int64_t> unroll_k{*this, "unroll-k", llvm::cl::desc("K steps of one tile per inner iteration"), llvm::cl::init(1)};
  Option<int64_t> reg_order{*this, "reg-order", llvm::cl::desc("0: register blocks m outer, 1: n outer"),
                            llvm::cl::init(0)};
  Option<bool> b_packed{*this, "b-packed",
                        llvm::cl::desc("B is a weight the caller stores in VNNI tiles once (the kernel exports "
                                       "sextant_amx_b_tiles); else B is packed in every call"),
                        llvm::cl::init(false)};
  Option<int64_t> threads{*this, "threads", llvm::cl::desc("OpenMP threads running the outermost M or N block loop"),
                          llvm::cl::init(1)};
  Option<int64_t> outer_order{*this, "outer-order", llvm::cl::desc("block loops 0: K,M,N 1: N,K,M 2: M,N,K"),
                              llvm::cl::init(0)};

  void runOnOperation() override {
    AmxParams p;
    p.block_m = block_m, p.block_n = block_n, p.block_k = block_k, p.tiles_m = tiles_m, p.tiles_n = tiles_n;
    p.unroll_k = unroll_k, p.reg_order = reg_order, p.outer_order = outer_order, p.b_packed = b_packed;
    p.threads = threads;
    if (!rewriteMatmulFunctions(getOperation(), "sextant-amx-gemm",
                                [&](func::FuncOp f, std::string& err) { return rewriteFunctionToAmx(f, p, err); }))
      signalPassFailure();
  }
};

}  // namespace

void registerAmxPass() { PassRegistration<AmxGemmPass>(); }

}  // namespace sextant::detail
