// sextant-opt: mlir-opt (MLIR 22, every upstream dialect, extension and pass) plus Sextant's own
// passes (sextant-vector-to-mfma, sextant-lds-double-buffer, sextant-bf16-mma-as-f16, sextant-nvvm-mma-bf16, sextant-dynamic-shared-memory,
// sextant-cpu-prefetch, sextant-skip-padding-rows, sextant-pack-constant-blocks). Exported Transform libraries whose MI300 schedules use the
// matrix cores name that pass (transform.apply_registered_pass "sextant-vector-to-mfma"), which a
// stock mlir-opt lacks; everything else in them runs on a stock mlir-opt as well.
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "sextant/codegen/compiler.h"

int main(int argc, char** argv) {
  mlir::registerAllPasses();
  sextant::registerSextantPasses();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "sextant-opt: mlir-opt with Sextant's passes (sextant-vector-to-mfma)\n", registry));
}
