#include "ranks/object/exchange.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ranks/capabilities.hpp"
#include "ranks/init.hpp"

namespace ranks::object {

namespace {

// Point-to-point parts use their own tag (inside the range MPI guarantees, 0..32767), so a
// program's own any-source receives on tag 0 can never take one.
constexpr int object_tag = 32766;

// A uint8 tensor over bytes on the comm device: the bytes themselves on the CPU, a copy on a GPU.
Tensor on_comm_device(Bytes& bytes, Device device) {
  Tensor host = Tensor::from_blob(bytes.data(), {static_cast<int64_t>(bytes.size())}, DType::UInt8,
                                  Device::cpu());
  return device.type == Device::Type::CPU ? host : host.to(device);
}

Tensor on_host(const Tensor& t) {
  return t.device().type == Device::Type::CPU ? t : t.to(Device::cpu());
}

// A payload's length (8 bytes) followed by its first eager_bytes: the whole payload when it is
// small.
Tensor head_of(const Bytes& payload) {
  Tensor head = Tensor::zeros({static_cast<int64_t>(8 + eager_bytes)}, DType::UInt8);
  auto* data = static_cast<uint8_t*>(head.data_ptr());
  const uint64_t length = payload.size();
  std::memcpy(data, &length, 8);
  std::memcpy(data + 8, payload.data(), std::min<uint64_t>(length, eager_bytes));
  return head;
}

uint64_t length_in(const Tensor& head) {
  uint64_t length = 0;
  std::memcpy(&length, head.data_ptr(), 8);
  return length;
}

// Every member's head (in host memory) and payload length, the lengths checked on every rank
// alike.
std::pair<std::vector<Tensor>, std::vector<uint64_t>> all_gather_heads(const Bytes& mine,
                                                                       const Group& group,
                                                                       std::string_view op,
                                                                       where_t where) {
  Tensor head = head_of(mine);
  const Device device = comm_device();
  std::vector<Tensor> heads =
      all_gather(device.type == Device::Type::CPU ? head : head.to(device), group, where);
  std::vector<uint64_t> lengths;
  lengths.reserve(heads.size());
  for (size_t r = 0; r < heads.size(); ++r) {
    heads[r] = on_host(heads[r]);
    lengths.push_back(length_in(heads[r]));
    check_announced_size(lengths.back(), describe_rank(static_cast<int>(r), group), op);
  }
  return {std::move(heads), std::move(lengths)};
}

uint64_t largest(const std::vector<uint64_t>& lengths) {
  return lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
}

std::vector<Tensor> all_on_host(std::vector<Tensor> tensors) {
  for (Tensor& t : tensors) t = on_host(t);
  return tensors;
}

}  // namespace

Parts::Parts(std::vector<Tensor> buffers, std::vector<uint64_t> lengths, size_t offset)
    : buffers_(std::move(buffers)), lengths_(std::move(lengths)), offset_(offset) {}

std::span<const uint8_t> Parts::operator[](size_t rank) const {
  return {static_cast<const uint8_t*>(buffers_[rank].data_ptr()) + offset_, lengths_[rank]};
}

std::string describe_rank(int group_rank, const Group& group) {
  if (group.is_default()) return fmt::format("rank {}", group_rank);
  return fmt::format("rank {} of group '{}'", group_rank, group.name());
}

Parts all_gather_bytes(Bytes mine, const Group& group, std::string_view op, where_t where) {
  auto [heads, lengths] = all_gather_heads(mine, group, op, where);
  if (largest(lengths) <= eager_bytes) return Parts(std::move(heads), std::move(lengths), 8);
  mine.resize(largest(lengths));  // every rank sends the same count; the padding is cut off
  std::vector<Tensor> parts = all_gather(on_comm_device(mine, comm_device()), group, where);
  return Parts(all_on_host(std::move(parts)), std::move(lengths));
}

std::optional<Parts> gather_bytes(Bytes mine, int dst, const Group& group, std::string_view op,
                                  where_t where) {
  auto [heads, lengths] = all_gather_heads(mine, group, op, where);
  if (largest(lengths) <= eager_bytes) {
    if (get_rank(group) != dst) return std::nullopt;
    return Parts(std::move(heads), std::move(lengths), 8);
  }
  mine.resize(largest(lengths));
  std::vector<Tensor> parts = gather(on_comm_device(mine, comm_device()), dst, group, where);
  if (get_rank(group) != dst) return std::nullopt;
  return Parts(all_on_host(std::move(parts)), std::move(lengths));
}

void broadcast_bytes(Bytes& payload, int src, const Group& group, std::string_view op,
                     where_t where) {
  const Device device = comm_device();
  const bool is_src = get_rank(group) == src;
  Tensor head = head_of(is_src ? payload : Bytes{});
  if (device.type != Device::Type::CPU) head = head.to(device);
  broadcast(head, src, group, where);
  head = on_host(head);
  const uint64_t bytes = length_in(head);
  check_announced_size(bytes, describe_rank(src, group), op);
  if (!is_src) payload.resize(bytes);
  if (bytes <= eager_bytes) {
    if (!is_src) {
      std::memcpy(payload.data(), static_cast<const uint8_t*>(head.data_ptr()) + 8, bytes);
    }
    return;
  }
  Tensor buffer = on_comm_device(payload, device);
  broadcast(buffer, src, group, where);
  if (!is_src && device.type != Device::Type::CPU) {
    Tensor host = on_host(buffer);
    std::memcpy(payload.data(), host.data_ptr(), payload.size());
  }
}

void stream_to_root(Bytes mine, int dst, const Group& group, std::string_view op,
                    const std::function<void(int, std::span<const uint8_t>)>& consume,
                    where_t where) {
  const std::vector<uint64_t> lengths = all_gather_heads(mine, group, op, where).second;
  const Device device = comm_device();
  if (get_rank(group) != dst) {
    send(on_comm_device(mine, device), dst, group, object_tag, where);
    return;
  }
  Bytes part;
  for (int r = 0; r < static_cast<int>(lengths.size()); ++r) {
    if (r == dst) {
      consume(r, mine);
      continue;
    }
    part.resize(lengths[static_cast<size_t>(r)]);
    Tensor buffer = on_comm_device(part, device);
    recv(buffer, r, group, object_tag, where);
    if (device.type != Device::Type::CPU) {
      Tensor host = on_host(buffer);
      std::memcpy(part.data(), host.data_ptr(), part.size());
    }
    consume(r, part);
  }
}

}  // namespace ranks::object
