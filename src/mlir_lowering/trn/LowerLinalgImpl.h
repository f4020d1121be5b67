// Internal to trn-lower-linalg (LowerLinalg.cpp, LowerBody.cpp, LowerGather.cpp, LowerAdvancedIndex.cpp, LowerMatmul.cpp):
// HBM windows, iteration-space tiles and the Lowerer, which lowers the linalg ops of one function
// to trn ops. Private: not installed, included by those files only. Each member is defined, with its comment, in the
// file its section names.
//
// Thread-safety: not thread-safe: one Lowerer per function, used by one thread (the pass runs on
// one module per thread). The free functions are reentrant.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir_lowering/trn/TrnDialect.h"
#include "mlir_lowering/trn/TrnPasses.h"

namespace trn::ir::lower_linalg_detail {

using mlir::failure;
using mlir::LogicalResult;
using mlir::success;
using mlir::Value;

// ---- HBM windows (LowerLinalg.cpp) ----

// An HBM buffer: a memref function argument or a memref.alloc, with its static strides, or a
// static memref.subview of one (then `memref` is the buffer, `offset` the view's first element
// in it and `strides` the view's).
struct Hbm {
  Value memref;
  llvm::SmallVector<int64_t> strides;  // elements
  int64_t offset = 0;                  // elements
};

std::optional<Hbm> HbmOf(Value v, std::string* why);

// How one operand's elements move with the loop indices: elem = base + sum stride[d] * index[d].
struct OperandAccess {
  Hbm hbm;
  int64_t base = 0;
  llvm::SmallVector<int64_t> stride;  // per loop dimension
};

std::optional<OperandAccess> AccessOf(Value memref, mlir::AffineMap map, std::string* why);

// A linear form of the loop indices: constant + sum coeff[d] * index[d].
struct Linear {
  int64_t constant = 0;
  llvm::SmallVector<int64_t> coeff;
};
// `e` over `dims` dims as a Linear form; nullopt for floordiv, mod, ceildiv, symbols or a
// product of two non-constants.
std::optional<Linear> Linearize(mlir::AffineExpr e, unsigned dims);

// One axis of a tile: `count` steps of loop dimension `dim`, `coeff` indices per step.
struct Axis {
  int dim = -1;
  int64_t coeff = 1;
  int64_t count = 1;
};

// A tile of the iteration space: base indices, the partition axis and up to 4 free axes.
struct TileSpace {
  llvm::SmallVector<int64_t> base;
  Axis partition;
  llvm::SmallVector<Axis> free;
  llvm::SmallVector<int64_t> FreeShape() const {
    llvm::SmallVector<int64_t> s;
    for (const Axis& a : free) s.push_back(a.count);
    if (s.empty()) s.push_back(1);
    return s;
  }
};

// The HBM side of a DMA: element offset, then sizes and strides (the partition axis first).
void SetHbmWindow(mlir::Operation* dma, int64_t offset, llvm::ArrayRef<int64_t> sizes, llvm::ArrayRef<int64_t> strides);
void SetWindow(mlir::Operation* dma, const OperandAccess& a, const TileSpace& t);

// ---- convolutions (LowerConv.cpp) ----

// An HBM window with explicit element offset, partitions and free sizes / strides.
struct Window {
  Value memref;
  int64_t offset = 0;
  int64_t partitions = 1, partition_stride = 0;
  llvm::SmallVector<int64_t, 4> sizes, strides;  // free dims, outermost first (1..4)
};

// One tap of a shifted-product sum: its weight tile's offset, its shift in the source's rows and
// columns, and an offset added to the source's (3-D: the depth slice the tap reads).
struct ConvTap {
  int64_t w_offset = 0;
  int64_t ah = 0, aw = 0;
  int64_t x_shift = 0;
};

// A sum of shifted products (LowerConv.cpp): for every channel m < channels and position (r, c)
// of a rows x cols grid,
//   y[m, r, c] = bias[m] + sum over taps, k < in_channels of w[k, m] * x[k, ah + sh r, aw + sw c]
// (x read from x_offset + the tap's x_shift) where x is zero outside [0, x_rows) x [0, x_cols) and w[k, m] is at w_offset + k w_k_stride +
// m w_m_stride. On TensorE (k in partition tiles, PSUM accumulating), or when `depthwise` (k is m,
// one weight per channel and tap) on VectorE.
struct ConvSum {
  Value y;
  int64_t y_offset = 0, y_channel = 0, y_row = 0, y_col = 0, channels = 0, rows = 0, cols = 0;
  Value x;
  int64_t x_offset = 0, x_channel = 0, x_row = 0, x_col = 0, in_channels = 0, x_rows = 0, x_cols = 0, sh = 1, sw = 1;
  Value w;
  int64_t w_k_stride = 0, w_m_stride = 0;
  std::vector<ConvTap> taps;
  Value bias;  // none: no bias
  int64_t bias_offset = 0, bias_stride = 1;
  bool depthwise = false;
};

int64_t FloorDiv(int64_t a, int64_t b);
int64_t CeilDiv(int64_t a, int64_t b);
// [lo, hi) of r in [0, n) with 0 <= a + s (r0 + r) < limit (hi == lo when none).
std::pair<int64_t, int64_t> Valid(int64_t a, int64_t s, int64_t r0, int64_t n, int64_t limit);
// Blocks of a rows x cols grid with at most `limit` positions each: whole rows when they fit.
struct Block {
  int64_t r0, rb, c0, cb;
};
std::vector<Block> Blocks(int64_t rows, int64_t cols, int64_t limit);
// A 1-D, 2-D or 3-D activation / weight memref as sizes and strides of (n, c, h, w); 1-D gets
// h = 1; 3-D (n, c, d, h, w) keeps its depth axis apart (1 and stride 0 otherwise).
struct Nchw {
  int64_t size[4] = {1, 1, 1, 1};
  int64_t stride[4] = {0, 0, 0, 0};
  Value buffer;        // the HBM buffer (Hbm::memref)
  int64_t offset = 0;  // the view's first element in it (Hbm::offset)
  int64_t depth = 1, depth_stride = 0;
};
// `perm` (trn.extern_perms): the call sees the buffer with its dimensions reordered, logical
// dimension d being buffer dimension perm[d] (a channels-last view, say); empty: as it is.
Nchw ShapeNchw(Value memref, const Hbm& h, llvm::ArrayRef<int64_t> perm);
// The permutation an extern call applies to its operand `v` (empty: none).
llvm::SmallVector<int64_t> ExternPerm(mlir::Operation* call, Value v);

// ---- the lowering of one function ----

class Lowerer {
 public:
  explicit Lowerer(mlir::func::FuncOp f) : f_(f), b_(f.getContext()) {}

  LogicalResult Run();

 private:
  // ---- dispatch, tiles and DMA, fill, iteration-space tiling (LowerLinalg.cpp) ----

  int64_t SourceOp(mlir::Operation* op);
  LogicalResult LowerOne(mlir::Operation* op);

  template <typename OpT, typename... Args>
  OpT Make(Args&&... args) {
    OpT op = b_.create<OpT>(loc_, std::forward<Args>(args)...);
    op->setAttr(kSourceOpAttr, b_.getI64IntegerAttr(source_op_));
    return op;
  }

  Value Sbuf(int64_t partitions, llvm::ArrayRef<int64_t> free, mlir::Type element);
  Value Psum(int64_t partitions, llvm::ArrayRef<int64_t> free);
  Value Load(const OperandAccess& a, const TileSpace& t, mlir::Type element);
  void Store(Value tile, const OperandAccess& a, const TileSpace& t);
  static mlir::Type ElementOf(Value memref);
  static bool Supported(Value memref);
  LogicalResult LowerFill(mlir::linalg::FillOp fill);
  LogicalResult LowerCopy(mlir::memref::CopyOp copy);
  static std::optional<double> ConstantOf(Value v);
  std::vector<TileSpace> Tiles(llvm::ArrayRef<int64_t> ranges, llvm::ArrayRef<bool> reduce, bool one_free_axis = false);

  // ---- elementwise and reducing generics (LowerLinalg.cpp) ----

  // A body value on a tile: a full tile, a column (one value per partition: a [P, 1] tile, e.g.
  // a runtime scalar), or a compile-time constant.
  enum class Kind { kConst = 0, kColumn = 1, kTile = 2 };
  struct Val {
    Value tile;  // kTile or kColumn
    std::optional<double> constant;
    bool column = false;
    Kind kind() const { return !tile ? Kind::kConst : column ? Kind::kColumn : Kind::kTile; }
    static Val Const(double c) { return Val{Value(), c, false}; }
    static Val Tile(Value t) { return Val{t, std::nullopt, false}; }
    static Val Column(Value t) { return Val{t, std::nullopt, true}; }
  };

  static mlir::Type DeviceType(mlir::Type t);
  LogicalResult LowerGeneric(mlir::linalg::GenericOp g);
  static mlir::Type TileElement(Value tile);
  Value NewTile(const TileSpace& t, Kind kind, mlir::Type element = {});
  Value Materialize(const Val& v, const TileSpace& t, Kind kind);
  static bool IsPredicate(const std::string& op);
  static bool ScalarForm(const std::string& op);
  Value ScalarOp(const Val& x, const std::string& op, const Val& s, const TileSpace& t, mlir::Type element = {});
  Value TensorOp(Value lhs, Value rhs, const std::string& op, const TileSpace& t, Kind kind, mlir::Type element = {});
  Value Act(const Val& x, const std::string& func, const TileSpace& t);
  Val Wrap(Value tile, Kind kind);
  static double Fold(const std::string& op, double a, double b);
  Val Binary(const std::string& op, const std::string& swapped, const Val& l, const Val& r, const TileSpace& t,
             mlir::Type element = {});
  // |x| = max(x, -x) (no instruction of its own), in tiles of `element` (default: Binary's).
  Val Abs(const Val& x, const TileSpace& t, mlir::Type element = {});
  Val Compare(mlir::arith::CmpFPredicate p, const Val& a, const Val& b, const TileSpace& t);
  Val Select(const Val& c, const Val& a, const Val& b, const TileSpace& t, mlir::Type element);
  std::optional<Val> Get(Value v, const TileSpace& t, llvm::DenseMap<Value, Val>& vals);

  // ---- one body op on a tile: float, integer and index ops; reductions' combine (LowerBody.cpp) ----

  LogicalResult LowerBodyOp(mlir::Operation& op, const TileSpace& t, llvm::DenseMap<Value, Val>& vals);
  bool MatchCombine(Value y, Value acc, std::string* op, Value* x, llvm::SmallPtrSet<mlir::Operation*, 4>* ops);
  std::optional<LogicalResult> LowerIntegerOp(mlir::Operation& op, llvm::ArrayRef<Val> in, const TileSpace& t,
                                              llvm::DenseMap<Value, Val>& vals);
  LogicalResult LowerIndex(mlir::linalg::IndexOp op, const TileSpace& t, llvm::DenseMap<Value, Val>& vals);
  LogicalResult LowerAffineIndex(mlir::AffineApplyOp op, const TileSpace& t, llvm::DenseMap<Value, Val>& vals);
  Val IntDivide(bool remainder, bool floor, const Val& a, const Val& b, const TileSpace& t);

  // ---- gathers and scatters: embedding, index_select, and by dma_scatter_add embedding backward,
  //      index_add, scatter_add (LowerGather.cpp) ----

  static bool IsGather(mlir::linalg::GenericOp g);
  LogicalResult LowerGather(mlir::linalg::GenericOp g);
  LogicalResult LowerEmbeddingBackward(mlir::linalg::GenericOp g);
  LogicalResult LowerIndexAdd(mlir::linalg::GenericOp g);

  // ---- advanced indexing: index.Tensor as dma_gather, index_put (accumulate) as
  //      dma_scatter_add of rows named by wrapped, combined index tiles (LowerAdvancedIndex.cpp) ----

  static bool IsAdvancedIndex(llvm::StringRef name);
  Value IndexRows(llvm::ArrayRef<Value> tiles, llvm::ArrayRef<int64_t> sizes, int64_t p);
  LogicalResult LowerAdvancedIndex(mlir::linalg::GenericOp g);

  // ---- convolutions: forward, grad input, grad weight, grad bias (LowerConv.cpp) ----

  static bool IsConv(mlir::linalg::GenericOp g);
  LogicalResult LowerConv(mlir::linalg::GenericOp g);
  Value LoadWindow(const Window& w, int64_t free, mlir::Type element);
  void StoreWindow(Value tile, const Window& w);
  Value CachedWindow(const Window& w, int64_t free, mlir::Type element = {});
  Value ShiftedTile(const ConvSum& s, const ConvTap& tap, int64_t k0, int64_t kb, int64_t r0, int64_t rb, int64_t c0,
                    int64_t cb, double fill = 0.0, mlir::Type element = {});
  void EmitConvSum(const ConvSum& s);
  std::map<std::tuple<intptr_t, int64_t, int64_t, int64_t, int64_t, int64_t>, Value> conv_cache_;
  int64_t conv_cache_bytes_ = 0;

  // ---- pooling: max / avg and their backward (LowerPool.cpp) ----

  static bool IsPool(mlir::linalg::GenericOp g);
  LogicalResult LowerPool(mlir::linalg::GenericOp g);

  // ---- matmul (LowerMatmul.cpp) ----

  mlir::linalg::FillOp ZeroFillBefore(mlir::Operation* op, Value out);
  // Matmuls whose operands are exact f32 widenings of bf16 / f16 buffers read those instead.
  struct HalfOperands {
    Hbm a, b;
    mlir::Type element;
  };
  void FindHalfOperands(llvm::ArrayRef<mlir::Operation*> ops);
  std::optional<Hbm> HalfSource(mlir::Operation* op, Value operand, mlir::linalg::GenericOp* widen);
  llvm::DenseMap<mlir::Operation*, HalfOperands> half_operands_;
  LogicalResult LowerMatmul(mlir::Operation* op, bool batched);
  LogicalResult LowerFillZero(Value c);

  mlir::func::FuncOp f_;
  mlir::OpBuilder b_;
  mlir::Location loc_ = b_.getUnknownLoc();
  int64_t source_op_ = 0;
  llvm::SmallPtrSet<mlir::Operation*, 16> lowered_, skipped_, fresh_;
};

}  // namespace trn::ir::lower_linalg_detail
