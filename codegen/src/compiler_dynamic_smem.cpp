// Dynamic shared memory for NVIDIA kernels whose tiles exceed the 48 KiB of static shared memory
// ptxas accepts per block (sm_80/sm_90 allow up to the opt-in maximum, 227 KiB on an H100, only as
// dynamic shared memory). Every workgroup buffer of a gpu.launch (the promoted, multi-buffered A
// and B tiles) becomes a memref.view into one extern shared array, at offsets aligned to 128
// bytes, and the launch's dynamic_shared_memory_size is set to the total.
//
// The array is a public, uninitialised memref.global of size 0 in the workgroup space: MLIR 22
// lowers it to an external LLVM global, which NVPTX emits as
//   .extern .shared .align 128 .b8 sextant_dyn_smem[];
// the dynamic shared memory of the launch (checked: tests/codegen/gpu_compile_test.cpp). MLIR's
// own gpu.dynamic_shared_memory is not used: it lowers to an internal zero-sized global that
// llc-22 emits as a 1-byte static .shared symbol (../shared/notes/gpu-matrix-units.md), so views
// of it would overlap static buffers. IREE does the same merge of address-space-3 globals into
// one external symbol (ConvertToDynamicSharedMemory in compiler/src/iree/compiler/Codegen/LLVMGPU/
// ConvertToLLVM.cpp). The host sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES before the
// launch (runtime/src/cuda_device.cpp).
#include "compiler_internal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {
namespace {

using namespace mlir;

constexpr const char* kSymbol = "sextant_dyn_smem";
constexpr int64_t kAlign = 128;

bool isWorkgroup(MemRefType t) {
  auto s = llvm::dyn_cast_or_null<gpu::AddressSpaceAttr>(t.getMemorySpace());
  return s && s.getValue() == gpu::AddressSpace::Workgroup;
}

}  // namespace

Result<int64_t> workgroupBuffersToDynamicSharedMemory(Operation* root) {
  std::vector<gpu::LaunchOp> launches;
  root->walk([&](gpu::LaunchOp l) { launches.push_back(l); });
  int64_t largest = 0;
  for (auto launch : launches) {
    std::vector<memref::AllocOp> allocs;
    launch.walk([&](memref::AllocOp a) {
      if (isWorkgroup(a.getType())) allocs.push_back(a);
    });
    if (allocs.empty()) continue;
    Operation* table = SymbolTable::getNearestSymbolTable(launch);
    if (!table) return Error{"dynamic shared memory: the kernel is not inside a module"};
    auto wg = gpu::AddressSpaceAttr::get(launch.getContext(), gpu::AddressSpace::Workgroup);
    auto i8 = IntegerType::get(launch.getContext(), 8);
    if (!SymbolTable::lookupSymbolIn(table, kSymbol)) {
      OpBuilder tb = OpBuilder::atBlockBegin(&table->getRegion(0).front());
      memref::GlobalOp::create(tb, launch.getLoc(), kSymbol, tb.getStringAttr("public"),
                               MemRefType::get({0}, i8, MemRefLayoutAttrInterface(), wg), Attribute(),
                               /*constant=*/false, tb.getI64IntegerAttr(kAlign));
    }
    std::vector<int64_t> offsets;
    int64_t total = 0;
    for (auto a : allocs) {
      MemRefType t = a.getType();
      if (!t.hasStaticShape() || !t.getLayout().isIdentity() || !t.getElementType().isIntOrFloat())
        return Error{"dynamic shared memory: a workgroup buffer is not a static, contiguous array"};
      total = (total + kAlign - 1) / kAlign * kAlign;
      offsets.push_back(total);
      total += t.getNumElements() * int64_t(t.getElementTypeBitWidth()) / 8;
    }
    OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
    Location loc = launch.getLoc();
    Value base = memref::GetGlobalOp::create(b, loc, MemRefType::get({0}, i8, MemRefLayoutAttrInterface(), wg), kSymbol);
    auto bytes_ty = MemRefType::get({total}, i8, MemRefLayoutAttrInterface(), wg);
    Value whole = memref::ReinterpretCastOp::create(b, loc, bytes_ty, base, 0, ArrayRef<int64_t>{total},
                                                    ArrayRef<int64_t>{1});
    for (size_t i = 0; i < allocs.size(); ++i) {
      auto a = allocs[i];
      Value off = arith::ConstantIndexOp::create(b, loc, offsets[i]);
      Value view = memref::ViewOp::create(b, loc, a.getType(), whole, off, ValueRange{});
      for (Operation* u : llvm::make_early_inc_range(a->getUsers()))
        if (llvm::isa<memref::DeallocOp>(u)) u->erase();
      a.replaceAllUsesWith(view);
      a.erase();
    }
    OpBuilder lb(launch);
    Value size = arith::ConstantIntOp::create(lb, loc, lb.getI32Type(), total);
    launch.getDynamicSharedMemorySizeMutable().assign(size);
    largest = std::max(largest, total);
  }
  return largest;
}

namespace {

// As a pass, for Transform libraries (transform.apply_registered_pass "sextant-dynamic-shared-memory").
struct DynamicSmemPass : public PassWrapper<DynamicSmemPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DynamicSmemPass)
  StringRef getArgument() const final { return "sextant-dynamic-shared-memory"; }
  StringRef getDescription() const final {
    return "Sextant: a kernel's workgroup buffers as views of one extern dynamic shared array (NVIDIA, > 48 KiB)";
  }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<arith::ArithDialect, memref::MemRefDialect, gpu::GPUDialect>();
  }
  void runOnOperation() override {
    auto r = workgroupBuffersToDynamicSharedMemory(getOperation());
    if (!r.ok()) {
      getOperation()->emitError() << r.error();
      signalPassFailure();
    }
  }
};

}  // namespace

void registerDynamicSmemPass() { PassRegistration<DynamicSmemPass>(); }

}  // namespace sextant::detail
