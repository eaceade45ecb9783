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

// Every member's payload length, checked on every rank alike.
std::vector<uint64_t> all_gather_lengths(uint64_t mine, const Group& group, std::string_view op,
                                         where_t where) {
  std::vector<Tensor> lengths =
      all_gather(Tensor::of<int64_t>({static_cast<int64_t>(mine)}, comm_device()), group, where);
  std::vector<uint64_t> out;
  out.reserve(lengths.size());
  for (size_t r = 0; r < lengths.size(); ++r) {
    const auto length = static_cast<uint64_t>(on_host(lengths[r]).item<int64_t>());
    check_announced_size(length, describe_rank(static_cast<int>(r), group), op);
    out.push_back(length);
  }
  return out;
}

uint64_t largest(const std::vector<uint64_t>& lengths) {
  return lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
}

std::vector<Tensor> all_on_host(std::vector<Tensor> tensors) {
  for (Tensor& t : tensors) t = on_host(t);
  return tensors;
}

}  // namespace

Parts::Parts(std::vector<Tensor> buffers, std::vector<uint64_t> lengths)
    : buffers_(std::move(buffers)), lengths_(std::move(lengths)) {}

std::span<const uint8_t> Parts::operator[](size_t rank) const {
  return {static_cast<const uint8_t*>(buffers_[rank].data_ptr()), lengths_[rank]};
}

std::string describe_rank(int group_rank, const Group& group) {
  if (group.is_default()) return fmt::format("rank {}", group_rank);
  return fmt::format("rank {} of group '{}'", group_rank, group.name());
}

Parts all_gather_bytes(Bytes mine, const Group& group, std::string_view op, where_t where) {
  std::vector<uint64_t> lengths = all_gather_lengths(mine.size(), group, op, where);
  mine.resize(largest(lengths));  // every rank sends the same count; the padding is cut off
  std::vector<Tensor> parts = all_gather(on_comm_device(mine, comm_device()), group, where);
  return Parts(all_on_host(std::move(parts)), std::move(lengths));
}

std::optional<Parts> gather_bytes(Bytes mine, int dst, const Group& group, std::string_view op,
                                  where_t where) {
  std::vector<uint64_t> lengths = all_gather_lengths(mine.size(), group, op, where);
  mine.resize(largest(lengths));
  std::vector<Tensor> parts = gather(on_comm_device(mine, comm_device()), dst, group, where);
  if (get_rank(group) != dst) return std::nullopt;
  return Parts(all_on_host(std::move(parts)), std::move(lengths));
}

void broadcast_bytes(Bytes& payload, int src, const Group& group, std::string_view op,
                     where_t where) {
  const Device device = comm_device();
  const bool is_src = get_rank(group) == src;
  Tensor length = Tensor::of<int64_t>({is_src ? static_cast<int64_t>(payload.size()) : 0}, device);
  broadcast(length, src, group, where);
  const auto bytes = static_cast<uint64_t>(on_host(length).item<int64_t>());
  check_announced_size(bytes, describe_rank(src, group), op);
  if (!is_src) payload.resize(bytes);
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
  const std::vector<uint64_t> lengths = all_gather_lengths(mine.size(), group, op, where);
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
