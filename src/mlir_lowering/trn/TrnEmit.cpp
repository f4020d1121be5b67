// The instruction-stream emitter and the linalg -> stream driver (see TrnEmit.h).
#include "mlir_lowering/trn/TrnEmit.h"

#include <array>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir_lowering/trn/TrnDialect.h"
#include "mlir_lowering/trn/TrnPasses.h"
#include "runtime/neuroncore/target.h"

namespace trn::ir {
namespace {

namespace nc = ::trn::runtime::neuroncore;

constexpr int64_t kChunk = 64;  // hazard-tracking granule in SBUF/PSUM, bytes per partition

absl::StatusOr<nc::DType> DTypeOf(mlir::Type t) {
  if (t.isF32() || t.isF64()) return nc::DType::kF32;  // no f64 on the device: the runtime passes f32
  if (t.isBF16()) return nc::DType::kBF16;
  if (t.isF16()) return nc::DType::kF16;
  if (t.isInteger(32)) return nc::DType::kI32;
  if (t.isInteger(64)) return nc::DType::kI64;  // HBM only (tiles are verified not to be i64)
  if (t.isInteger(8)) return nc::DType::kI8;
  if (t.isInteger(1)) return nc::DType::kU8;  // torch bool: one byte, 0 or 1
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return absl::UnimplementedError(absl::StrCat("element type ", os.str(), " has no NeuronCore dtype here"));
}

// The encoding of an instruction's function: its index in the instruction set's table (the
// dialect's verifiers accept only names in it).
template <typename E, size_t N>
absl::StatusOr<uint32_t> FuncIndex(const std::array<std::string_view, N>& table, llvm::StringRef name) {
  std::optional<E> f = nc::FromName<E>(table, std::string_view(name.data(), name.size()));
  if (!f.has_value()) return absl::InternalError(absl::StrCat("no instruction encodes '", name.str(), "'"));
  return static_cast<uint32_t>(*f);
}

struct ChunkState {
  int writer_engine = -1;
  int64_t writer = -1;
  std::array<int64_t, nc::kEngines> readers{-1, -1, -1, -1, -1};
};

class Emitter {
 public:
  Emitter(mlir::func::FuncOp f, const nc::TargetSpec& target) : f_(f), target_(target) {
    sbuf_.resize(static_cast<size_t>(target.sbuf_bytes_per_partition / kChunk) + 1);
    psum_.resize(static_cast<size_t>(target.psum_bytes_per_partition / kChunk) + 1);
  }

  absl::StatusOr<nc::InstructionStream> Run() {
    stream_.target = target_.name;
    for (mlir::BlockArgument arg : f_.getArguments()) {
      if (auto m = arg.getType().dyn_cast<mlir::MemRefType>()) {
        absl::StatusOr<uint32_t> b = AddHbm(arg, m, static_cast<int32_t>(arg.getArgNumber()));
        if (!b.ok()) return b.status();
      }
    }
    absl::Status status = absl::OkStatus();
    f_.walk([&](mlir::Operation* op) {
      if (!status.ok()) return;
      if (auto a = mlir::dyn_cast<mlir::memref::AllocOp>(op)) {
        status = AddHbm(a.getResult(), a.getType(), -1).status();
      } else if (auto t = mlir::dyn_cast<AllocOp>(op)) {
        status = AddTile(t);
      } else if (op->getDialect() && op->getDialect()->getNamespace() == "trn" && !mlir::isa<SignalOp, WaitOp>(op)) {
        status = AddInstruction(op);
      }
    });
    if (!status.ok()) return status;
    Finish();
    return std::move(stream_);
  }

 private:
  absl::StatusOr<uint32_t> AddHbm(mlir::Value v, mlir::MemRefType type, int32_t binding) {
    absl::StatusOr<nc::DType> dt = DTypeOf(type.getElementType());
    if (!dt.ok()) return dt.status();
    llvm::SmallVector<int64_t> strides;
    int64_t offset = 0;
    if (mlir::failed(mlir::getStridesAndOffset(type, strides, offset))) {
      return absl::InvalidArgumentError("HBM buffer without a strided layout");
    }
    int64_t extent = 1;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (type.getShape()[d] == 0 || mlir::ShapedType::isDynamic(type.getShape()[d])) extent = 0;  // dynamic: the binding's size
    }
    if (extent != 0 && type.hasStaticShape()) {
      for (int64_t d = 0; d < type.getRank(); ++d) extent += (type.getShape()[d] - 1) * std::abs(strides[d]);
    }
    nc::Buffer b;
    b.space = nc::Space::kHbm;
    b.dtype = *dt;
    b.bytes_per_partition = static_cast<uint64_t>(extent * nc::DTypeBytes(*dt));
    b.binding = binding;
    buffer_of_[v] = static_cast<uint32_t>(stream_.buffers.size());
    stream_.buffers.push_back(b);
    return buffer_of_[v];
  }

  absl::Status AddTile(AllocOp a) {
    nc::Buffer b;
    mlir::Type element;
    int64_t free = 0;
    if (auto s = a.getType().dyn_cast<SbufTileType>()) {
      b.space = nc::Space::kSbuf;
      b.partitions = static_cast<uint32_t>(s.getPartitions());
      element = s.getElementType();
      free = s.freeElements();
    } else {
      auto p = a.getType().cast<PsumTileType>();
      b.space = nc::Space::kPsum;
      b.partitions = static_cast<uint32_t>(p.getPartitions());
      element = p.getElementType();
      free = p.freeElements();
    }
    absl::StatusOr<nc::DType> dt = DTypeOf(element);
    if (!dt.ok()) return dt.status();
    b.dtype = *dt;
    b.bytes_per_partition = static_cast<uint64_t>(free * nc::DTypeBytes(*dt));
    auto off = a->getAttrOfType<mlir::IntegerAttr>(kOffsetAttr);
    if (!off) return absl::FailedPreconditionError("trn.alloc without an offset: run trn-allocate first");
    b.offset = static_cast<uint64_t>(off.getInt());
    buffer_of_[a.getResult()] = static_cast<uint32_t>(stream_.buffers.size());
    stream_.buffers.push_back(b);
    return absl::OkStatus();
  }

  // The access of a whole tile, or of an HBM window (the DMA's attributes).
  absl::StatusOr<nc::Access> AccessOf(mlir::Value v, mlir::Operation* dma) {
    auto it = buffer_of_.find(v);
    if (it == buffer_of_.end()) return absl::InvalidArgumentError("operand is not a known buffer");
    nc::Access a;
    a.buffer = it->second;
    const nc::Buffer& b = stream_.buffers[a.buffer];
    if (b.space != nc::Space::kHbm) {
      llvm::ArrayRef<int64_t> shape = v.getType().isa<SbufTileType>() ? v.getType().cast<SbufTileType>().getFreeShape()
                                                                       : v.getType().cast<PsumTileType>().getFreeShape();
      a.partitions = b.partitions;
      auto tsizes = dma ? dma->getAttrOfType<mlir::DenseI64ArrayAttr>(kTileSizesAttr) : nullptr;
      auto tstrides = dma ? dma->getAttrOfType<mlir::DenseI64ArrayAttr>(kTileStridesAttr) : nullptr;
      auto toffset = dma ? dma->getAttrOfType<mlir::IntegerAttr>(kTileOffsetAttr) : nullptr;
      if (tsizes && tstrides && toffset) {  // a window of the tile (the verifier checked it)
        a.offset = toffset.getInt();
        a.sizes.assign(tsizes.asArrayRef().begin(), tsizes.asArrayRef().end());
        a.strides.assign(tstrides.asArrayRef().begin(), tstrides.asArrayRef().end());
        return a;
      }
      a.sizes.assign(shape.begin(), shape.end());
      a.strides.assign(shape.size(), 1);
      for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) a.strides[i] = a.strides[i + 1] * shape[i + 1];
      return a;
    }
    auto sizes = dma ? dma->getAttrOfType<mlir::DenseI64ArrayAttr>(kHbmSizesAttr) : nullptr;
    auto strides = dma ? dma->getAttrOfType<mlir::DenseI64ArrayAttr>(kHbmStridesAttr) : nullptr;
    auto offset = dma ? dma->getAttrOfType<mlir::IntegerAttr>(kHbmOffsetAttr) : nullptr;
    if (!sizes || !strides || !offset || sizes.size() < 2 || sizes.size() != strides.size() || sizes.size() > 5) {
      return absl::InvalidArgumentError("HBM access without a window (hbm_offset, hbm_sizes, hbm_strides: partition + 1..4 free)");
    }
    a.partitions = static_cast<uint32_t>(sizes[0]);
    a.partition_stride = strides[0];
    a.offset = offset.getInt();
    a.sizes.assign(sizes.asArrayRef().begin() + 1, sizes.asArrayRef().end());
    a.strides.assign(strides.asArrayRef().begin() + 1, strides.asArrayRef().end());
    return a;
  }

  absl::Status AddInstruction(mlir::Operation* op) {
    nc::Instruction in;
    if (auto s = op->getAttrOfType<mlir::IntegerAttr>(kSourceOpAttr)) in.source_op = static_cast<uint32_t>(s.getInt());
    llvm::SmallVector<mlir::Value> operands;  // inputs first, then the output
    if (auto d = mlir::dyn_cast<DmaCopyOp>(op)) {
      in.opcode = nc::Opcode::kDmaCopy;
      operands = {d.getSrc(), d.getDst()};
    } else if (auto g = mlir::dyn_cast<DmaGatherOp>(op)) {
      in.opcode = nc::Opcode::kDmaGather;
      operands = {g.getTable(), g.getIndices(), g.getDst()};
    } else if (auto sa = mlir::dyn_cast<DmaScatterAddOp>(op)) {
      in.opcode = nc::Opcode::kDmaScatterAdd;
      operands = {sa.getSrc(), sa.getIndices(), sa.getTable()};
    } else if (auto m = mlir::dyn_cast<MatmulOp>(op)) {
      in.opcode = nc::Opcode::kMatmul;
      operands = {m.getStationary(), m.getMoving(), m.getDst()};
      if (m.getAccumulate()) in.flags |= nc::Instruction::kAccumulate;
    } else if (auto t = mlir::dyn_cast<TransposeOp>(op)) {
      in.opcode = nc::Opcode::kTranspose;
      operands = {t.getSrc(), t.getDst()};
    } else if (auto a = mlir::dyn_cast<ActivationOp>(op)) {
      in.opcode = nc::Opcode::kActivation;
      operands = {a.getSrc()};
      if (a.getBias()) operands.push_back(a.getBias());
      operands.push_back(a.getDst());
      absl::StatusOr<uint32_t> func = FuncIndex<nc::ActFunc>(nc::kActFuncNames, a.getFunc());
      if (!func.ok()) return func.status();
      in.func = *func;
      in.imm = a.getScale().convertToDouble();
    } else if (auto c = mlir::dyn_cast<TensorCopyOp>(op)) {
      in.opcode = nc::Opcode::kTensorCopy;
      operands = {c.getSrc(), c.getDst()};
    } else if (auto tt = mlir::dyn_cast<TensorTensorOp>(op)) {
      in.opcode = nc::Opcode::kTensorTensor;
      operands = {tt.getLhs(), tt.getRhs(), tt.getDst()};
      absl::StatusOr<uint32_t> func = FuncIndex<nc::AluOp>(nc::kAluOpNames, tt.getOp());
      if (!func.ok()) return func.status();
      in.func = *func;
    } else if (auto ts = mlir::dyn_cast<TensorScalarOp>(op)) {
      in.opcode = nc::Opcode::kTensorScalar;
      operands = {ts.getSrc()};
      if (ts.getColumn()) operands.push_back(ts.getColumn());
      operands.push_back(ts.getDst());
      absl::StatusOr<uint32_t> func = FuncIndex<nc::AluOp>(nc::kAluOpNames, ts.getOp());
      if (!func.ok()) return func.status();
      in.func = *func;
      if (ts.getImm()) in.imm = ts.getImm()->convertToDouble();
    } else if (auto cp = mlir::dyn_cast<CopyPredicatedOp>(op)) {
      in.opcode = nc::Opcode::kCopyPredicated;
      operands = {cp.getSrc(), cp.getPredicate(), cp.getDst()};
    } else if (auto r = mlir::dyn_cast<TensorReduceOp>(op)) {
      in.opcode = nc::Opcode::kTensorReduce;
      operands = {r.getSrc(), r.getDst()};
      absl::StatusOr<uint32_t> func = FuncIndex<nc::ReduceOp>(nc::kReduceOpNames, r.getOp());
      if (!func.ok()) return func.status();
      in.func = *func;
    } else if (auto ms = mlir::dyn_cast<MemsetOp>(op)) {
      in.opcode = nc::Opcode::kMemset;
      operands = {ms.getDst()};
      in.imm = ms.getValue().convertToDouble();
    } else if (auto io = mlir::dyn_cast<IotaOp>(op)) {
      in.opcode = nc::Opcode::kIota;
      operands = {io.getDst()};
      // I64Attr getters return the value zero-extended: read them signed (negative bases and steps).
      in.imm = static_cast<double>(static_cast<int64_t>(io.getBase()));
      in.imm2 = static_cast<double>(static_cast<int64_t>(io.getPartitionStep()));
      in.imm3 = static_cast<double>(static_cast<int64_t>(io.getStep()));
    } else {
      return absl::UnimplementedError(absl::StrCat("no instruction for ", op->getName().getStringRef().str()));
    }
    for (mlir::Value v : operands) {
      absl::StatusOr<nc::Access> a = AccessOf(v, mlir::isa<DmaCopyOp, DmaGatherOp, DmaScatterAddOp>(op) ? op : nullptr);
      if (!a.ok()) {
        return absl::Status(a.status().code(), absl::StrCat(op->getName().getStringRef().str(), ": ", a.status().message()));
      }
      in.operands.push_back(*a);
    }
    auto engine_attr = op->getAttrOfType<mlir::StringAttr>(kEngineAttr);
    if (!engine_attr) return absl::FailedPreconditionError("instruction without an engine: run trn-assign-engines first");
    const llvm::StringRef engine_name = engine_attr.getValue();
    const std::optional<nc::Engine> engine =
        nc::FromName<nc::Engine>(nc::kEngineNames, std::string_view(engine_name.data(), engine_name.size()));
    if (!engine.has_value()) return absl::InternalError(absl::StrCat("unknown engine '", engine_name.str(), "'"));
    const int e = static_cast<int>(*engine);
    if (absl::Status placed = CheckPlacement(in, *engine, engine_name); !placed.ok()) {
      return placed;
    }
    const int64_t index = static_cast<int64_t>(pending_[e].size());
    Pending p;
    p.in = std::move(in);
    p.need.fill(-1);
    const bool reads_dst = (p.in.opcode == nc::Opcode::kMatmul && (p.in.flags & nc::Instruction::kAccumulate)) ||
                           p.in.opcode == nc::Opcode::kCopyPredicated || p.in.opcode == nc::Opcode::kDmaScatterAdd;
    for (size_t i = 0; i < p.in.operands.size(); ++i) {
      const bool write = i + 1 == p.in.operands.size();
      Touch(p.in.operands[i], e, index, write, &p.need);
      if (write && reads_dst) Touch(p.in.operands[i], e, index, false, &p.need);
    }
    pending_[e].push_back(std::move(p));
    return absl::OkStatus();
  }

  // Which engine may run which instruction ([ISA] per instruction; docs/trn_target.md §3):
  // GpSimd cannot access PSUM; ScalarE's tensor_scalar only multiplies and adds (Trn2).
  absl::Status CheckPlacement(const nc::Instruction& in, nc::Engine engine, llvm::StringRef name) const {
    using E = nc::Engine;
    using O = nc::Opcode;
    bool ok = false;
    switch (in.opcode) {
      case O::kDmaCopy: case O::kDmaGather: case O::kDmaScatterAdd: ok = engine == E::kDma; break;
      case O::kMatmul: case O::kTranspose: ok = engine == E::kTensor; break;
      case O::kActivation: ok = engine == E::kScalar; break;
      case O::kTensorTensor: case O::kMemset: ok = engine == E::kVector || engine == E::kGpSimd; break;
      case O::kTensorScalar:
        ok = engine == E::kVector || engine == E::kGpSimd ||
             (engine == E::kScalar && (in.func == 0 || in.func == 2));  // add, multiply
        break;
      case O::kTensorReduce: case O::kCopyPredicated: ok = engine == E::kVector; break;
      case O::kTensorCopy: ok = engine != E::kTensor && engine != E::kDma; break;
      case O::kIota: ok = engine == E::kGpSimd; break;
      default: ok = true;
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(nc::OpcodeName(in.opcode), " (op ", in.source_op,
                                                     ") cannot run on ", name.str()));
    }
    if (engine == E::kGpSimd) {
      for (const nc::Access& a : in.operands) {
        if (stream_.buffers[a.buffer].space == nc::Space::kPsum) {
          return absl::InvalidArgumentError(absl::StrCat(nc::OpcodeName(in.opcode), " (op ", in.source_op,
                                                         ") on gpsimd touches PSUM, which GpSimd cannot access"));
        }
      }
    }
    return absl::OkStatus();
  }

  // Records the access's hazards with earlier instructions on other engines in `need`, then
  // marks the bytes as read or written by (engine, index).
  void Touch(const nc::Access& a, int engine, int64_t index, bool write, std::array<int64_t, nc::kEngines>* need) {
    const nc::Buffer& b = stream_.buffers[a.buffer];
    ChunkState* chunks = nullptr;
    int64_t first = 0, last = 0;
    if (b.space == nc::Space::kHbm) {
      chunks = &hbm_[a.buffer];
    } else {
      std::vector<ChunkState>& space = b.space == nc::Space::kSbuf ? sbuf_ : psum_;
      first = static_cast<int64_t>(b.offset) / kChunk;
      last = (static_cast<int64_t>(b.offset + b.bytes_per_partition) + kChunk - 1) / kChunk - 1;
      last = std::min<int64_t>(last, static_cast<int64_t>(space.size()) - 1);
      chunks = space.data();
    }
    for (int64_t c = first; c <= last; ++c) {
      ChunkState& s = chunks[c];
      if (s.writer_engine >= 0 && s.writer_engine != engine) {
        (*need)[s.writer_engine] = std::max((*need)[s.writer_engine], s.writer);
      }
      if (write) {
        for (int r = 0; r < nc::kEngines; ++r) {
          if (r != engine && s.readers[r] >= 0) (*need)[r] = std::max((*need)[r], s.readers[r]);
        }
        s.writer_engine = engine;
        s.writer = index;
        s.readers.fill(-1);
      } else {
        s.readers[engine] = std::max(s.readers[engine], index);
      }
    }
  }

  // Semaphore `e` counts engine e's signals; an instruction another engine waits for is
  // followed by a signal, and the waiter waits for that signal's ordinal.
  void Finish() {
    std::array<std::vector<int64_t>, nc::kEngines> ordinal;
    for (int e = 0; e < nc::kEngines; ++e) ordinal[e].assign(pending_[e].size(), 0);
    for (int e = 0; e < nc::kEngines; ++e) {
      for (const Pending& p : pending_[e]) {
        for (int w = 0; w < nc::kEngines; ++w) {
          if (p.need[w] >= 0) ordinal[w][p.need[w]] = 1;
        }
      }
    }
    for (int e = 0; e < nc::kEngines; ++e) {
      int64_t n = 0;
      for (int64_t& o : ordinal[e]) o = o ? ++n : 0;
    }
    for (int e = 0; e < nc::kEngines; ++e) {
      std::array<int64_t, nc::kEngines> waited{};
      std::vector<nc::Instruction>& q = stream_.queues[e];
      for (size_t i = 0; i < pending_[e].size(); ++i) {
        Pending& p = pending_[e][i];
        for (int w = 0; w < nc::kEngines; ++w) {
          if (p.need[w] < 0) continue;
          const int64_t ord = ordinal[w][p.need[w]];
          if (ord <= waited[w]) continue;
          nc::Instruction wait;
          wait.opcode = nc::Opcode::kWait;
          wait.source_op = p.in.source_op;
          wait.semaphore = static_cast<uint32_t>(w);
          wait.value = static_cast<uint32_t>(ord);
          q.push_back(wait);
          waited[w] = ord;
        }
        const uint32_t source = p.in.source_op;
        q.push_back(std::move(p.in));
        if (ordinal[e][i] > 0) {
          nc::Instruction signal;
          signal.opcode = nc::Opcode::kSignal;
          signal.source_op = source;
          signal.semaphore = static_cast<uint32_t>(e);
          q.push_back(signal);
        }
      }
    }
  }

  struct Pending {
    nc::Instruction in;
    std::array<int64_t, nc::kEngines> need;  // per engine: the last of its instructions to wait for, or -1
  };

  mlir::func::FuncOp f_;
  const nc::TargetSpec& target_;
  nc::InstructionStream stream_;
  llvm::DenseMap<mlir::Value, uint32_t> buffer_of_;
  std::array<std::vector<Pending>, nc::kEngines> pending_;
  std::vector<ChunkState> sbuf_, psum_;
  std::map<uint32_t, ChunkState> hbm_;
};

}  // namespace

absl::StatusOr<nc::InstructionStream> EmitInstructionStream(mlir::ModuleOp module, const std::string& target) {
  std::optional<nc::TargetSpec> spec = nc::TargetByName(target);
  if (!spec) return absl::InvalidArgumentError(absl::StrCat("unknown trn target '", target, "' (trn2, trn3)"));
  mlir::func::FuncOp f;
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    if (fn.isExternal()) continue;
    if (f) return absl::InvalidArgumentError("the module has more than one function");
    f = fn;
  }
  if (!f) return absl::InvalidArgumentError("the module has no function");
  return Emitter(f, *spec).Run();
}

absl::StatusOr<nc::InstructionStream> CompileToStream(const std::string& mlir_text, const std::string& target,
                                                      std::string* trn_mlir) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::arith::ArithDialect, mlir::func::FuncDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect, TrnDialect>();
  mlir::MLIRContext context(registry);
  context.disableMultithreading();
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic& d) {
    llvm::raw_string_ostream os(diagnostics);
    if (!diagnostics.empty()) os << "\n";
    os << d.getLocation() << ": " << d.str();
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(mlir_text, &context);
  if (!module) return absl::InvalidArgumentError(absl::StrCat("cannot parse the module: ", diagnostics));
  mlir::PassManager pm(&context);
  buildTrnPipeline(pm, target);
  if (mlir::failed(pm.run(*module))) {
    return absl::UnimplementedError(absl::StrCat("trn pipeline failed: ", diagnostics));
  }
  if (trn_mlir) {
    trn_mlir->clear();
    llvm::raw_string_ostream os(*trn_mlir);
    module->print(os);
  }
  return EmitInstructionStream(*module, target);
}

void buildTrnPipeline(mlir::OpPassManager& pm, const std::string& target) {
  pm.addPass(createLowerLinalgToTrnPass());
  pm.addPass(createAssignEnginesPass());
  pm.addPass(createAllocateTilesPass(target));
}

void registerTrnPasses() {
  mlir::registerPass([] { return createBf16TypesPass(); });
  mlir::registerPass([] { return createLowerLinalgToTrnPass(); });
  mlir::registerPass([] { return createAssignEnginesPass(); });
  mlir::registerPass([] { return createAllocateTilesPass("trn2"); });
  struct Options : public mlir::PassPipelineOptions<Options> {
    Option<std::string> target{*this, "target", llvm::cl::desc("trn2 or trn3"), llvm::cl::init("trn2")};
  };
  mlir::PassPipelineRegistration<Options>("trn-pipeline", "linalg on memrefs -> allocated trn instructions",
                                          [](mlir::OpPassManager& pm, const Options& o) { buildTrnPipeline(pm, o.target); });
}

}  // namespace trn::ir
