#include "trace/backward_lines.h"

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>

namespace trn::trace {
namespace {

uint64_t NodeKey(uint64_t thread_id, uint64_t seq) { return (thread_id << 48) ^ seq; }

}  // namespace

void BackwardLines::RememberForward(base::SourceId forward) {
  if (forward == base::kNoSource) {
    return;
  }
  const uint64_t seq = at::sequence_number::peek();
  if (seq == 0) {
    return;
  }
  const uint64_t key = NodeKey(at::RecordFunction::currentThreadId(), seq - 1);
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = by_node_.try_emplace(key, forward);
  if (!inserted) {
    return;  // the first op recorded under a node names it (later ones are its internals)
  }
  order_.push_back(key);
  if (order_.size() > capacity_) {
    by_node_.erase(order_.front());
    order_.pop_front();
  }
}

base::SourceId BackwardLines::LookupBackward() {
  c10::intrusive_ptr<torch::autograd::Node> node = torch::autograd::get_current_node();
  if (!node) {
    return base::kNoSource;
  }
  const uint64_t key = NodeKey(node->thread_id(), node->sequence_nr());
  absl::MutexLock lock(&mu_);
  auto it = by_node_.find(key);
  if (it == by_node_.end()) {
    return base::kNoSource;
  }
  auto [bw, inserted] = backward_of_.try_emplace(it->second, base::kNoSource);
  if (inserted) {
    base::SourceLocation loc = base::GlobalSourceTable().Lookup(it->second);
    loc.function += loc.function.empty() ? "(backward)" : " (backward)";
    bw->second = base::GlobalSourceTable().Intern(loc);
  }
  return bw->second;
}

}  // namespace trn::trace
