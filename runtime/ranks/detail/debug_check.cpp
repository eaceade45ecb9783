#include "ranks/detail/debug_check.hpp"

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ranks/backend.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/detail/fingerprint.hpp"
#include "ranks/errors.hpp"

namespace ranks::detail {

bool debug_detail() {
  static const bool detail = [] {
    const char* value = std::getenv("RANKS_DEBUG");
    return value != nullptr && std::string_view(value) == "detail";
  }();
  return detail;
}

void verify_same_call(GroupImpl& group, const OpRequest& request) {
  const Fingerprint mine = fingerprint_of(request);
  const Device device = comm_device();
  Tensor record = Tensor::empty({static_cast<int64_t>(sizeof mine)}, DType::UInt8, Device::cpu());
  std::memcpy(record.data_ptr(), &mine, sizeof mine);
  OpRequest exchange;
  exchange.kind = OpKind::AllGather;
  exchange.inputs = {device.type == Device::Type::CPU ? record : record.to(device)};
  for (int r = 0; r < group.size(); ++r) {
    exchange.outputs.push_back(Tensor::empty(record.shape(), DType::UInt8, device));
  }
  exchange.seq = group.next_collective_seq;  // the op's own, which dispatch gives it next
  exchange.fingerprint_check = true;
  exchange.timeout = group.timeout;
  exchange.where = request.where;
  exchange.blocking = true;  // waited for just below
  const TensorList records = exchange.outputs;
  group.backend->submit(std::move(exchange)).wait();

  // Everyone compares every record with group rank 0's, so every rank raises the same error.
  std::vector<Fingerprint> all(records.size());
  for (size_t r = 0; r < records.size(); ++r) {
    Tensor host = records[r].to(Device::cpu());
    std::memcpy(&all[r], host.data_ptr(), sizeof(Fingerprint));
  }
  for (size_t r = 1; r < all.size(); ++r) {
    std::vector<std::string> diffs = differences(all[0], all[r]);
    if (diffs.empty()) continue;
    const std::vector<int>& members = group.spec.global_ranks();
    // The refused op still had its seq, as in the simulator; the next exchange must not reuse it
    // (gloo tags messages by seq, and a slow rank may still be receiving this one's).
    const uint64_t seq = group.next_collective_seq++;
    throw Mismatch(mismatch_text(group.spec.name, static_cast<int64_t>(seq), "RANKS_DEBUG=detail",
                                 members[0], describe(all[0]), members[r], describe(all[r]),
                                 diffs));
  }
}

}  // namespace ranks::detail
