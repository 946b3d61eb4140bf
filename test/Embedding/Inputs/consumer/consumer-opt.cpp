// A driver of another project: its own name, harp's dialect and passes, and
// a pass of its own (a class deriving from MLIR's, which must link with the
// compile options the package gives).
#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/InitAllHarp.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace {
/// Tags the module with the number of harp.map_reduce ops in it.
struct CountMapReduce
    : mlir::PassWrapper<CountMapReduce, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CountMapReduce)
  llvm::StringRef getArgument() const override { return "count-map-reduce"; }
  llvm::StringRef getDescription() const override {
    return "Tags the module with its number of harp.map_reduce ops";
  }
  void runOnOperation() override {
    int64_t count = 0;
    getOperation().walk([&](mlir::harp::MapReduceOp) { ++count; });
    mlir::Builder b(&getContext());
    getOperation()->setAttr("consumer.map_reduce_count",
                            b.getI64IntegerAttr(count));
  }
};
} // namespace

int main(int argc, char **argv) {
  mlir::harp::registerAllHarpPasses();
  mlir::PassRegistration<CountMapReduce>();
  mlir::DialectRegistry registry;
  mlir::harp::registerAllHarpDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "a compiler embedding harp\n", registry));
}
