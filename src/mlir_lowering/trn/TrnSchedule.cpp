// trn-assign-engines and trn-allocate (see TrnPasses.h).
#include <algorithm>
#include <array>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "mlir_lowering/trn/TrnDialect.h"
#include "mlir_lowering/trn/TrnPasses.h"
#include "mlir_lowering/trn/TrnRefuse.h"
#include "runtime/neuroncore/target.h"

namespace trn::ir {
namespace {

namespace nc = ::trn::runtime::neuroncore;

int64_t FreeElements(mlir::Type t) {
  if (auto s = t.dyn_cast<SbufTileType>()) return s.freeElements();
  if (auto p = t.dyn_cast<PsumTileType>()) return p.freeElements();
  return 0;
}

bool IsPsum(mlir::Value v) { return v && v.getType().isa<PsumTileType>(); }

// ---- engines ----

struct AssignEnginesPass : public mlir::PassWrapper<AssignEnginesPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AssignEnginesPass)
  llvm::StringRef getArgument() const final { return "trn-assign-engines"; }
  llvm::StringRef getDescription() const final {
    return "give each trn instruction an engine: fixed by the op, or the less loaded of those that can run it";
  }
  void runOnOperation() override {
    mlir::Builder b(&getContext());
    getOperation().walk([&](mlir::func::FuncOp f) {
      // Modeled work per engine so far, in free elements (the per-instruction cost scales with them).
      std::array<double, 4> load{};  // vector, scalar, gpsimd (index 0..2), unused
      const double clock[3] = {0.96, 1.2, 1.2};  // relative speeds ([G3] clocks); only the ratio matters
      const char* names[3] = {"vector", "scalar", "gpsimd"};
      f.walk([&](mlir::Operation* op) {
        if (op->getDialect() == nullptr || op->getDialect()->getNamespace() != "trn" || mlir::isa<AllocOp>(op)) return;
        if (op->hasAttr(kEngineAttr)) return;
        const char* fixed = nullptr;
        std::vector<int> choices;
        if (mlir::isa<DmaCopyOp, DmaGatherOp, DmaScatterAddOp>(op)) fixed = "dma";
        else if (mlir::isa<MatmulOp, TransposeOp>(op)) fixed = "tensor";
        else if (mlir::isa<ActivationOp>(op)) fixed = "scalar";
        else if (mlir::isa<IotaOp>(op)) fixed = "gpsimd";
        else if (mlir::isa<SignalOp, WaitOp>(op)) return;
        else if (auto c = mlir::dyn_cast<TensorCopyOp>(op)) {
          // [ISA] tensor_copy: VectorE, ScalarE or GpSimd; GpSimd cannot read PSUM ([G2]).
          choices = IsPsum(c.getSrc()) ? std::vector<int>{0, 1} : std::vector<int>{0, 1, 2};
        } else if (auto s = mlir::dyn_cast<TensorScalarOp>(op)) {
          choices = IsPsum(s.getSrc()) ? std::vector<int>{0} : std::vector<int>{0, 2};
        } else if (mlir::isa<MemsetOp>(op)) {
          choices = IsPsum(op->getOperand(0)) ? std::vector<int>{0} : std::vector<int>{0, 2};
        } else {
          fixed = "vector";  // tensor_tensor, tensor_reduce
        }
        const double work = std::max<double>(64, FreeElements(op->getOperand(op->getNumOperands() > 0 ? 0 : 0).getType()));
        if (fixed) {
          op->setAttr(kEngineAttr, b.getStringAttr(fixed));
          const std::string f(fixed);
          if (f == "vector") load[0] += work / clock[0];
          if (f == "scalar") load[1] += work / clock[1];
          if (f == "gpsimd") load[2] += work / clock[2];
          return;
        }
        int best = choices.front();
        for (int c : choices) {
          if (load[c] + work / clock[c] < load[best] + work / clock[best]) best = c;
        }
        load[best] += work / clock[best];
        op->setAttr(kEngineAttr, b.getStringAttr(names[best]));
      });
    });
  }
};

// ---- allocation ----

struct Interval {
  AllocOp alloc;
  int64_t def = 0, last = 0;  // instruction indices
  int64_t bytes = 0;          // per partition, rounded to the alignment
  bool psum = false;
};

constexpr int64_t kSbufAlign = 64;  // assumption: 64-byte placement granule (docs/trn_target.md §2.5)

// First-fit placement with each block kept busy `slack` instructions past its last use.
bool Place(std::vector<Interval>& tiles, int64_t sbuf_capacity, int64_t psum_capacity, int64_t slack,
           std::vector<int64_t>* offsets) {
  struct Busy {
    int64_t until, offset, bytes;
  };
  std::vector<Busy> busy[2];
  offsets->assign(tiles.size(), 0);
  for (size_t i = 0; i < tiles.size(); ++i) {
    const Interval& t = tiles[i];
    std::vector<Busy>& live = busy[t.psum ? 1 : 0];
    const int64_t capacity = t.psum ? psum_capacity : sbuf_capacity;
    live.erase(std::remove_if(live.begin(), live.end(), [&](const Busy& b) { return b.until < t.def; }), live.end());
    std::sort(live.begin(), live.end(), [](const Busy& a, const Busy& b) { return a.offset < b.offset; });
    int64_t at = 0;
    for (const Busy& b : live) {
      if (b.offset >= at + t.bytes) break;
      at = std::max(at, b.offset + b.bytes);
    }
    if (at + t.bytes > capacity) return false;
    (*offsets)[i] = at;
    live.push_back({t.last + slack, at, t.bytes});
  }
  return true;
}

struct AllocateTilesPass : public mlir::PassWrapper<AllocateTilesPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AllocateTilesPass)
  AllocateTilesPass() = default;
  explicit AllocateTilesPass(const std::string& target) { target_ = target; }
  AllocateTilesPass(const AllocateTilesPass& o) : mlir::PassWrapper<AllocateTilesPass, mlir::OperationPass<mlir::ModuleOp>>(o) {}
  llvm::StringRef getArgument() const final { return "trn-allocate"; }
  llvm::StringRef getDescription() const final {
    return "place SBUF/PSUM tiles by live range (bytes per partition), keeping freed blocks busy a while for double buffering";
  }
  void runOnOperation() override {
    std::optional<nc::TargetSpec> target = nc::TargetByName(std::string(target_));
    if (!target) {
      getOperation().emitError("unknown trn target '") << std::string(target_) << "'";
      return signalPassFailure();
    }
    mlir::Builder b(&getContext());
    for (auto f : getOperation().getOps<mlir::func::FuncOp>()) {
      llvm::DenseMap<mlir::Operation*, int64_t> index;
      int64_t n = 0;
      f.walk([&](mlir::Operation* op) { index[op] = n++; });
      std::vector<Interval> tiles;
      f.walk([&](AllocOp a) {
        Interval t;
        t.alloc = a;
        t.def = t.last = index[a];
        for (mlir::Operation* user : a->getUsers()) t.last = std::max(t.last, index[user]);
        t.psum = a.getType().isa<PsumTileType>();
        const int64_t elem = [&] {
          mlir::Type e = t.psum ? a.getType().cast<PsumTileType>().getElementType()
                                : a.getType().cast<SbufTileType>().getElementType();
          return std::max<int64_t>(1, e.getIntOrFloatBitWidth() / 8);
        }();
        const int64_t raw = FreeElements(a.getType()) * elem;
        t.bytes = t.psum ? kPsumBankBytesPerPartition * ((raw + kPsumBankBytesPerPartition - 1) / kPsumBankBytesPerPartition)
                         : kSbufAlign * ((raw + kSbufAlign - 1) / kSbufAlign);
        tiles.push_back(t);
      });
      std::sort(tiles.begin(), tiles.end(), [](const Interval& a, const Interval& b) { return a.def < b.def; });
      std::vector<int64_t> offsets;
      bool placed = false;
      for (int64_t slack : {256, 64, 16, 4, 0}) {
        if (Place(tiles, target->sbuf_bytes_per_partition, target->psum_bytes_per_partition, slack, &offsets)) {
          placed = true;
          break;
        }
      }
      if (!placed) {
        refuseWithoutPrefix(f) << "tiles do not fit " << target->name << "'s SBUF (" << target->sbuf_bytes_per_partition
                                         << " B per partition) or PSUM (" << target->psum_bytes_per_partition
                                         << " B) even without double buffering";
        return signalPassFailure();
      }
      for (size_t i = 0; i < tiles.size(); ++i) tiles[i].alloc->setAttr(kOffsetAttr, b.getI64IntegerAttr(offsets[i]));
    }
  }
  Option<std::string> target_{*this, "target", llvm::cl::desc("trn2 or trn3 (capacities)"), llvm::cl::init("trn2")};
};

}  // namespace

std::unique_ptr<mlir::Pass> createAssignEnginesPass() { return std::make_unique<AssignEnginesPass>(); }
std::unique_ptr<mlir::Pass> createAllocateTilesPass(std::string target) {
  return std::make_unique<AllocateTilesPass>(std::move(target));
}

}  // namespace trn::ir
