#include "mlir_lowering/trn/TrnDialect.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "runtime/neuroncore/instruction_stream.h"

#include "mlir_lowering/trn/TrnOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "mlir_lowering/trn/TrnOpsTypes.cpp.inc"

#define GET_OP_CLASSES
#include "mlir_lowering/trn/TrnOps.cpp.inc"

namespace trn::ir {
namespace {

int64_t ElementBytes(mlir::Type t) {
  if (auto f = t.dyn_cast<mlir::FloatType>()) return (f.getWidth() + 7) / 8;
  if (auto i = t.dyn_cast<mlir::IntegerType>()) return (i.getWidth() + 7) / 8;
  return 0;
}

int64_t Product(llvm::ArrayRef<int64_t> v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

mlir::LogicalResult VerifyTile(llvm::function_ref<mlir::InFlightDiagnostic()> emit_error, llvm::StringRef what,
                               int64_t partitions, llvm::ArrayRef<int64_t> free, mlir::Type element) {
  if (partitions < 1 || partitions > kMaxPartitions) {
    return emit_error() << what << " tiles have 1.." << kMaxPartitions << " partitions, got " << partitions;
  }
  if (free.empty()) return emit_error() << what << " tiles need a free shape (use [1] for a column)";
  for (int64_t d : free) {
    if (d < 1) return emit_error() << what << " free dimensions must be positive, got " << d;
  }
  if (ElementBytes(element) == 0) return emit_error() << what << " tiles hold integers or floats, got " << element;
  if (element.isInteger(64) || element.isF64()) {
    return emit_error() << what << " tiles hold no 64-bit types (the engines have none), got " << element;
  }
  return mlir::success();
}

// Partitions, free elements and element type of a DMA endpoint (tile or memref).
struct Extent {
  int64_t elements = 0;
  mlir::Type element;
};

Extent ExtentOf(mlir::Type t) {
  if (auto s = t.dyn_cast<SbufTileType>()) return {s.getPartitions() * s.freeElements(), s.getElementType()};
  auto m = t.cast<mlir::MemRefType>();
  return {m.hasStaticShape() ? m.getNumElements() : -1, m.getElementType()};
}

bool IsMatmulInput(mlir::Type t) { return t.isBF16() || t.isF16() || t.isF32(); }

}  // namespace

mlir::Type HbmTileType(mlir::Type t) {
  if (t.isF64() || t.isBF16() || t.isF16()) return mlir::Float32Type::get(t.getContext());
  if (t.isInteger(64)) return mlir::IntegerType::get(t.getContext(), 32);
  return t;
}

void TrnDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "mlir_lowering/trn/TrnOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "mlir_lowering/trn/TrnOps.cpp.inc"
      >();
}

int64_t SbufTileType::freeElements() const { return Product(getFreeShape()); }
int64_t SbufTileType::bytesPerPartition() const { return freeElements() * ElementBytes(getElementType()); }
int64_t PsumTileType::freeElements() const { return Product(getFreeShape()); }
int64_t PsumTileType::bytesPerPartition() const { return freeElements() * ElementBytes(getElementType()); }

mlir::LogicalResult SbufTileType::verify(llvm::function_ref<mlir::InFlightDiagnostic()> emit_error,
                                         int64_t partitions, llvm::ArrayRef<int64_t> free, mlir::Type element) {
  return VerifyTile(emit_error, "SBUF", partitions, free, element);
}

mlir::LogicalResult PsumTileType::verify(llvm::function_ref<mlir::InFlightDiagnostic()> emit_error,
                                         int64_t partitions, llvm::ArrayRef<int64_t> free, mlir::Type element) {
  if (mlir::failed(VerifyTile(emit_error, "PSUM", partitions, free, element))) return mlir::failure();
  const int64_t bytes = Product(free) * ElementBytes(element);
  if (bytes > kPsumBankBytesPerPartition) {
    return emit_error() << "a PSUM tile must fit one bank (" << kPsumBankBytesPerPartition
                        << " bytes per partition), this one needs " << bytes;
  }
  return mlir::success();
}

mlir::LogicalResult DmaCopyOp::verify() {
  const mlir::Type src = getSrc().getType(), dst = getDst().getType();
  if (src.isa<mlir::MemRefType>() && dst.isa<mlir::MemRefType>()) {
    return emitOpError("copies to or from SBUF; HBM to HBM is not a NeuronCore DMA here");
  }
  Extent a = ExtentOf(src), b = ExtentOf(dst);
  // An HBM window (hbm_sizes: partitions, then free sizes) moves its own elements.
  if (auto sizes = (*this)->getAttrOfType<mlir::DenseI64ArrayAttr>("hbm_sizes")) {
    int64_t n = 1;
    for (int64_t s : sizes.asArrayRef()) n *= s;
    (src.isa<mlir::MemRefType>() ? a : b).elements = n;
  }
  // A tile window (tile_offset, tile_sizes, tile_strides: free elements of every partition of
  // the tile) on the tile side of an HBM <-> SBUF copy.
  auto tsizes = (*this)->getAttrOfType<mlir::DenseI64ArrayAttr>("tile_sizes");
  auto tstrides = (*this)->getAttrOfType<mlir::DenseI64ArrayAttr>("tile_strides");
  auto toffset = (*this)->getAttrOfType<mlir::IntegerAttr>("tile_offset");
  if (tsizes || tstrides || toffset) {
    const bool src_tile = src.isa<SbufTileType>();
    if (!tsizes || !tstrides || !toffset || tsizes.size() != tstrides.size() || tsizes.empty() || tsizes.size() > 4 ||
        src_tile == dst.isa<SbufTileType>()) {
      return emitOpError("a tile window needs tile_offset, tile_sizes and tile_strides (1..4 free dims) and one "
                         "HBM side");
    }
    auto tile = (src_tile ? src : dst).cast<SbufTileType>();
    int64_t n = 1, lo = toffset.getInt(), hi = toffset.getInt();
    for (size_t i = 0; i < tsizes.size(); ++i) {
      if (tsizes[i] <= 0) return emitOpError("tile window sizes must be positive");
      n *= tsizes[i];
      (tstrides[i] < 0 ? lo : hi) += (tsizes[i] - 1) * tstrides[i];
    }
    if (lo < 0 || hi >= tile.freeElements()) {
      return emitOpError("tile window reaches outside the tile's ") << tile.freeElements() << " free elements";
    }
    (src_tile ? a : b).elements = n * tile.getPartitions();
  }
  // The NeuronCore has no 64-bit types: f64 HBM buffers (runtime scalars, accumulators) hold
  // f32; i64 HBM buffers (torch's int64 tensors) are narrowed to i32 tiles and widened back by
  // the DMA, as the Neuron compiler carries int64 as int32. bf16 / f16 HBM buffers move as they
  // are (matmul operands) or widen to f32 tiles, rounded to nearest even when stored back.
  const bool src_hbm = src.isa<mlir::MemRefType>();
  const mlir::Type hbm = src_hbm ? a.element : b.element, tile = src_hbm ? b.element : a.element;
  if (tile != hbm && tile != HbmTileType(hbm)) {
    return emitOpError("element types differ (") << a.element << " vs " << b.element
                                                   << "); DMA does not convert, use tensor_copy";
  }
  if (a.elements >= 0 && b.elements >= 0 && a.elements != b.elements) {
    return emitOpError("moves ") << a.elements << " elements into " << b.elements;
  }
  return mlir::success();
}

namespace {

// dma_gather and dma_scatter_add: one table row per partition of `tile`, named by `indices`.
mlir::LogicalResult VerifyIndirect(mlir::Operation* op, SbufTileType indices, SbufTileType tile, mlir::Value table_value) {
  if (indices.freeElements() != 1 || !indices.getElementType().isInteger(32)) {
    return op->emitOpError("indices are one i32 per partition: a [P, [1]] i32 tile, got ") << indices;
  }
  if (indices.getPartitions() != tile.getPartitions()) {
    return op->emitOpError("moves one row per partition: ") << indices.getPartitions() << " indices for "
                                                             << tile.getPartitions() << " partitions";
  }
  auto sizes = op->getAttrOfType<mlir::DenseI64ArrayAttr>("hbm_sizes");
  auto strides = op->getAttrOfType<mlir::DenseI64ArrayAttr>("hbm_strides");
  if (!sizes || !strides || !op->hasAttr("hbm_offset") || sizes.size() < 2 || sizes.size() > 5 ||
      sizes.size() != strides.size()) {
    return op->emitOpError("needs a table window: hbm_offset, hbm_sizes and hbm_strides (rows, then 1..4 row axes)");
  }
  int64_t row = 1;
  for (size_t i = 1; i < sizes.size(); ++i) row *= sizes[i];
  if (sizes[0] < 1 || row != tile.freeElements()) {
    return op->emitOpError("a row of the window has ") << row << " elements, the tile " << tile.freeElements()
                                                       << " per partition";
  }
  const mlir::Type table = table_value.getType().cast<mlir::MemRefType>().getElementType();
  if (table != tile.getElementType() && HbmTileType(table) != tile.getElementType()) {  // as dma_copy
    return op->emitOpError("element types differ (") << table << " vs " << tile.getElementType() << ")";
  }
  return mlir::success();
}

}  // namespace

mlir::LogicalResult DmaGatherOp::verify() {
  return VerifyIndirect(*this, getIndices().getType().cast<SbufTileType>(), getDst().getType().cast<SbufTileType>(),
                        getTable());
}

mlir::LogicalResult DmaScatterAddOp::verify() {
  auto src = getSrc().getType().cast<SbufTileType>();
  if (!src.getElementType().isF32()) return emitOpError("accumulates fp32 rows only, got ") << src.getElementType();
  return VerifyIndirect(*this, getIndices().getType().cast<SbufTileType>(), src, getTable());
}

mlir::LogicalResult MatmulOp::verify() {
  auto st = getStationary().getType().cast<SbufTileType>();
  auto mv = getMoving().getType().cast<SbufTileType>();
  auto dst = getDst().getType().cast<PsumTileType>();
  if (st.getFreeShape().size() != 1 || mv.getFreeShape().size() != 1 || dst.getFreeShape().size() != 1) {
    return emitOpError("operands must be 2-D tiles [partitions, [free]]");
  }
  const int64_t k = st.getPartitions(), m = st.getFreeShape()[0], n = mv.getFreeShape()[0];
  if (mv.getPartitions() != k) {
    return emitOpError("contracts over the partitions: stationary has ") << k << ", moving has " << mv.getPartitions();
  }
  if (m > kMatmulMaxStationaryFree) {
    return emitOpError("stationary free size ") << m << " exceeds TensorE's " << kMatmulMaxStationaryFree;
  }
  if (n > kMatmulMaxMovingFree) {
    return emitOpError("moving free size ") << n << " exceeds TensorE's " << kMatmulMaxMovingFree;
  }
  if (dst.getPartitions() != m || dst.getFreeShape()[0] != n) {
    return emitOpError("result tile must be [") << m << ", [" << n << "]]";
  }
  if (!IsMatmulInput(st.getElementType()) || st.getElementType() != mv.getElementType()) {
    return emitOpError("inputs must both be bf16, f16 or f32");
  }
  if (!dst.getElementType().isF32()) return emitOpError("PSUM accumulates in f32");
  return mlir::success();
}

namespace {

namespace nc = trn::runtime::neuroncore;

// Whether `name` is in `table` (the instruction set's tables: runtime/neuroncore/
// instruction_stream.h), leaving out `excluded`; if not, `all` lists what is.
template <size_t N>
bool InTable(llvm::StringRef name, const std::array<std::string_view, N>& table, std::string* all,
             std::initializer_list<llvm::StringRef> excluded = {}) {
  auto allowed = [&](std::string_view t) {
    return std::find(excluded.begin(), excluded.end(), llvm::StringRef(t.data(), t.size())) == excluded.end();
  };
  for (std::string_view t : table) {
    if (allowed(t) && llvm::StringRef(t.data(), t.size()) == name) return true;
  }
  for (std::string_view t : table) {
    if (allowed(t)) *all += (all->empty() ? "" : ", ") + std::string(t);
  }
  return false;
}

template <typename A, typename B>
mlir::LogicalResult SameShape(mlir::Operation* op, A a, B b) {
  if (a.getPartitions() != b.getPartitions() || a.getFreeShape() != b.getFreeShape()) {
    return op->emitOpError("source and destination tiles differ in shape");
  }
  return mlir::success();
}

template <typename F>
mlir::LogicalResult WithTile(mlir::Type t, F&& f) {
  if (auto s = t.dyn_cast<SbufTileType>()) return f(s);
  return f(t.cast<PsumTileType>());
}

// The ALU's bitwise ops and shifts act on integers.
bool IsBitwise(llvm::StringRef name) {
  return name.startswith("bitwise_") || name == "logical_shift_left" || name == "arith_shift_right";
}

// A bitwise op's result is an integer tile (an operand may be a float tile holding integral
// values, as an integer runtime scalar is passed).
mlir::LogicalResult VerifyBitwise(mlir::Operation* op, llvm::StringRef name, SbufTileType dst) {
  if (!IsBitwise(name) || dst.getElementType().isa<mlir::IntegerType>()) return mlir::success();
  return op->emitOpError("'") << name << "' writes an integer tile, got " << dst.getElementType();
}

}  // namespace

mlir::LogicalResult ActivationOp::verify() {
  std::string all;
  if (!InTable(getFunc(), nc::kActFuncNames, &all)) {
    return emitOpError("unknown function '") << getFunc() << "' (ScalarE's table: " << all << ")";
  }
  auto dst = getDst().getType().cast<SbufTileType>();
  if (mlir::failed(WithTile(getSrc().getType(), [&](auto src) { return SameShape(*this, src, dst); }))) {
    return mlir::failure();
  }
  if (getBias()) {
    auto bias = getBias().getType().cast<SbufTileType>();
    if (bias.getPartitions() != dst.getPartitions() || bias.freeElements() != 1) {
      return emitOpError("bias is one value per partition: a [") << dst.getPartitions() << ", [1]] tile";
    }
  }
  return mlir::success();
}

mlir::LogicalResult TensorCopyOp::verify() {
  auto dst = getDst().getType().cast<SbufTileType>();
  return WithTile(getSrc().getType(), [&](auto src) { return SameShape(*this, src, dst); });
}

namespace {


// Partitions and free shape of a tile type, either memory.
struct Shape {
  int64_t partitions;
  llvm::SmallVector<int64_t> free;
  bool operator==(const Shape& o) const { return partitions == o.partitions && free == o.free; }
};

Shape ShapeOf(mlir::Type t) {
  if (auto s = t.dyn_cast<SbufTileType>()) return {s.getPartitions(), llvm::SmallVector<int64_t>(s.getFreeShape())};
  auto p = t.cast<PsumTileType>();
  return {p.getPartitions(), llvm::SmallVector<int64_t>(p.getFreeShape())};
}

mlir::LogicalResult VerifySemaphore(mlir::Operation* op, llvm::StringRef engine, int32_t semaphore) {
  std::string all;
  if (!InTable(engine, nc::kEngineNames, &all)) {
    return op->emitOpError("unknown engine '") << engine << "' (engines: " << all << ")";
  }
  if (semaphore < 0 || semaphore >= kSemaphores) {
    return op->emitOpError("semaphore ") << semaphore << " out of range 0.." << kSemaphores - 1;
  }
  return mlir::success();
}

}  // namespace

mlir::LogicalResult TransposeOp::verify() {
  auto src = getSrc().getType().cast<SbufTileType>();
  auto dst = getDst().getType().cast<PsumTileType>();
  if (src.getFreeShape().size() != 1 || dst.getFreeShape().size() != 1) {
    return emitOpError("transposes 2-D tiles [partitions, [free]]");
  }
  if (dst.getPartitions() != src.getFreeShape()[0] || dst.getFreeShape()[0] != src.getPartitions()) {
    return emitOpError("result must be [") << src.getFreeShape()[0] << ", [" << src.getPartitions() << "]]";
  }
  if (dst.getElementType() != src.getElementType()) {
    return emitOpError("result element type must be the source's ([ISA] nc_transpose)");
  }
  return mlir::success();
}

mlir::LogicalResult TensorTensorOp::verify() {
  std::string all;
  if (!InTable(getOp(), nc::kAluOpNames, &all)) {
    return emitOpError("unknown op '") << getOp() << "' (VectorE's: " << all << ")";
  }
  const Shape d = ShapeOf(getDst().getType());
  if (!(ShapeOf(getLhs().getType()) == d) || !(ShapeOf(getRhs().getType()) == d)) {
    return emitOpError("operand and result tiles differ in shape");
  }
  return VerifyBitwise(*this, getOp(), getDst().getType().cast<SbufTileType>());
}

mlir::LogicalResult TensorScalarOp::verify() {
  std::string all;
  if (!InTable(getOp(), nc::kAluOpNames, &all, /*excluded=*/{"not_equal", "logical_and", "logical_or"})) {
    return emitOpError("unknown op '") << getOp() << "' (VectorE's: " << all << ")";
  }
  if (getImm().has_value() == static_cast<bool>(getColumn())) {
    return emitOpError("takes exactly one scalar: an `imm` attribute or a `column` tile");
  }
  if (failed(VerifyBitwise(*this, getOp(), getDst().getType().cast<SbufTileType>()))) return mlir::failure();
  if (IsBitwise(getOp()) && getImm() && std::trunc(getImm()->convertToDouble()) != getImm()->convertToDouble()) {
    return emitOpError("'") << getOp() << "' takes an integral immediate, got " << getImm()->convertToDouble();
  }
  const Shape d = ShapeOf(getDst().getType());
  if (!(ShapeOf(getSrc().getType()) == d)) return emitOpError("source and destination tiles differ in shape");
  if (getColumn()) {
    auto c = getColumn().getType().cast<SbufTileType>();
    if (c.getPartitions() != d.partitions || c.freeElements() != 1) {
      return emitOpError("the column holds one value per partition: a [") << d.partitions << ", [1]] tile";
    }
  }
  return mlir::success();
}

mlir::LogicalResult CopyPredicatedOp::verify() {
  const Shape d = ShapeOf(getDst().getType());
  if (!(ShapeOf(getSrc().getType()) == d) || !(ShapeOf(getPredicate().getType()) == d)) {
    return emitOpError("source, predicate and destination tiles differ in shape");
  }
  auto element = [](mlir::Type t) {
    if (auto s = t.dyn_cast<SbufTileType>()) return s.getElementType();
    return t.cast<PsumTileType>().getElementType();
  };
  if (!element(getPredicate().getType()).isa<mlir::IntegerType>()) {
    return emitOpError("the predicate must be an integer tile ([TCP]: uint8/16/32)");
  }
  if (element(getSrc().getType()) != element(getDst().getType())) {
    return emitOpError("source and destination element types differ");
  }
  return mlir::success();
}

mlir::LogicalResult TensorReduceOp::verify() {
  std::string all;
  if (!InTable(getOp(), nc::kReduceOpNames, &all)) {
    return emitOpError("unknown reduction '") << getOp() << "' (VectorE's: " << all << ")";
  }
  auto dst = getDst().getType().cast<SbufTileType>();
  if (ShapeOf(getSrc().getType()).partitions != dst.getPartitions() || dst.freeElements() != 1) {
    return emitOpError("reduces each partition to one value: the result is a [")
           << ShapeOf(getSrc().getType()).partitions << ", [1]] tile";
  }
  return mlir::success();
}

mlir::LogicalResult SignalOp::verify() {
  return VerifySemaphore(*this, getEngine(), static_cast<int32_t>(getSemaphore()));
}

mlir::LogicalResult WaitOp::verify() {
  if (getValue() < 1) return emitOpError("waits for a positive count, got ") << getValue();
  return VerifySemaphore(*this, getEngine(), static_cast<int32_t>(getSemaphore()));
}

}  // namespace trn::ir
