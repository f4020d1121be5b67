#include "runtime/op_runner.h"

#include <ATen/core/Tensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/host_view.h"
#include "base/op_error.h"
#include "runtime/split_matmul.h"

namespace trn::runtime {
namespace {

absl::Status CopyResult(const c10::OperatorHandle& op, const at::Tensor& dst, const at::Tensor& src) {
  if (!dst.defined()) {
    return absl::OkStatus();
  }
  if (dst.sizes() != src.sizes()) {
    return base::MakeOpError(base::ErrorKind::kRuntime,
                             absl::StrCat("internal: the Meta kernel of ", OpName(op), " predicted sizes [",
                                          absl::StrJoin(dst.sizes(), ","), "] but the CPU kernel returned [",
                                          absl::StrJoin(src.sizes(), ","), "]"));
  }
  HostAlias(dst).copy_(src);
  return absl::OkStatus();
}

}  // namespace

absl::Status StatusFromCurrentException() {
  try {
    throw;
  } catch (const c10::IndexError& e) {
    return base::MakeOpError(base::ErrorKind::kIndex, e.what_without_backtrace());
  } catch (const c10::ValueError& e) {
    return base::MakeOpError(base::ErrorKind::kValue, e.what_without_backtrace());
  } catch (const c10::TypeError& e) {
    return base::MakeOpError(base::ErrorKind::kType, e.what_without_backtrace());
  } catch (const c10::NotImplementedError& e) {
    return base::MakeOpError(base::ErrorKind::kNotImplemented, e.what_without_backtrace());
  } catch (const c10::LinAlgError& e) {
    return base::MakeOpError(base::ErrorKind::kLinAlg, e.what_without_backtrace());
  } catch (const c10::OutOfMemoryError& e) {
    return base::MakeOpError(base::ErrorKind::kOutOfMemory, e.what_without_backtrace());
  } catch (const c10::DistBackendError& e) {
    return base::MakeOpError(base::ErrorKind::kDistBackend, e.what_without_backtrace());
  } catch (const c10::Error& e) {
    return base::MakeOpError(base::ErrorKind::kRuntime, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return base::MakeOpError(base::ErrorKind::kRuntime, e.what());
  } catch (...) {
    return base::MakeOpError(base::ErrorKind::kRuntime, "unknown C++ exception");
  }
}

std::string OpName(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  return name.overload_name.empty() ? name.name : absl::StrCat(name.name, ".", name.overload_name);
}

absl::Status RunOnHost(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                       std::vector<c10::IValue>* results) {
  try {
    // Host aliases never require grad; skip the autograd and view-tracking layers entirely.
    c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    torch::jit::Stack stack;
    stack.reserve(args.size());
    const auto& schema_args = op.schema().arguments();
    std::vector<std::pair<at::Tensor, at::Tensor>> outs;  // (device out= tensor, its host alias)
    for (size_t i = 0; i < args.size(); ++i) {
      const c10::IValue& a = args[i];
      if (i < schema_args.size() && schema_args[i].is_out() && a.isTensor() && IsDeviceTensor(a.toTensor())) {
        outs.emplace_back(a.toTensor(), ResizableHostAlias(a.toTensor()));
        stack.push_back(outs.back().second);
        continue;
      }
      stack.push_back(ToHostArg(a));
    }
    // Keep the arguments alive across the call: kernels returning std::tuple<Tensor&...> read
    // their (out=) arguments after the stack dropped them.
    std::vector<c10::IValue> keep_alive(stack.begin(), stack.end());
    if (!RunSplitMatmul(op, &stack)) {  // (a large product, on the executor's cores)
      op.callBoxed(&stack);
    }
    for (auto& [device, alias] : outs) {
      if (!ResizedAway(device, alias)) {
        continue;
      }
      // The kernel resized its output on the way (mse_loss.out): its final value lives in host
      // memory the resize allocated; it must end with the geometry recorded for the device.
      absl::Status copied = CopyResult(op, device, alias);
      if (!copied.ok()) {
        return copied;
      }
    }
    *results = std::move(stack);
    return absl::OkStatus();
  } catch (...) {
    return StatusFromCurrentException();
  }
}

absl::Status ExecuteRecord(const OpRecord& record) {
  std::vector<c10::IValue> results;
  absl::Status status = RunOnHost(record.op, record.args, &results);
  if (!status.ok()) {
    return status;
  }
  try {
    c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    for (size_t i = 0; i < record.outputs.size() && i < results.size(); ++i) {
      const c10::IValue& dst = record.outputs[i];
      if (dst.isTensor()) {
        status.Update(CopyResult(record.op, dst.toTensor(), results[i].toTensor()));
      } else if (dst.isTensorList()) {
        auto d = dst.toTensorList();
        auto s = results[i].toTensorList();
        for (size_t j = 0; j < d.size(); ++j) {
          status.Update(CopyResult(record.op, d.get(j), s.get(j)));
        }
      }
    }
  } catch (...) {
    return StatusFromCurrentException();
  }
  return status;
}

}  // namespace trn::runtime
