#include "ranks/object/exchange.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <new>
#include <tuple>
#include <utility>

#include "ranks/capabilities.hpp"
#include "ranks/context.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/detail/gather_into.hpp"
#include "ranks/init.hpp"

namespace ranks::object {

namespace {

// Point-to-point parts use their own tag (inside the range MPI guarantees, 0..32767), so a
// program's own any-source receives on tag 0 can never take one.
constexpr int object_tag = 32766;

// The blocks an exchange writes into (the heads it sends, the slots it receives into): from
// malloc, unless a KeepExchangeBlocks lives on the thread; then, from kMappedBytes up, pages
// mapped for them alone and kept by the thread when freed, the two largest up to kSpareBytes
// each, for its next exchange. Freed memory of that size goes
// back to the kernel, and writing into fresh pages costs a fault per page, which on a virtual
// machine outweighs the exchange itself (reports/python.md). Mapped apart from malloc's heap, the
// kept blocks leave glibc's own handling of the program's other large allocations as it was. A block is taken, not shared: a simulated rank
// that waits inside an exchange holds its own, and the others on its thread find other spares or
// map new blocks. This is a cache of memory, not state of a rank.
constexpr size_t kMappedBytes = size_t{128} << 10;
constexpr size_t kSpareBytes = size_t{64} << 20;

struct Spares {
  int keepers = 0;  // KeepExchangeBlocks alive on the thread
  std::array<uint8_t*, 2> blocks{};
  std::array<size_t, 2> bytes{};
  ~Spares() {
    for (int i = 0; i < 2; ++i) {
      if (blocks[i] != nullptr) ::munmap(blocks[i], bytes[i]);
    }
  }
};
thread_local Spares spares;

size_t whole_pages(size_t bytes) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// At least `bytes` of uninitialized host memory: the smallest spare that holds them, else new.
Block take_block(size_t bytes) {
  if (bytes < kMappedBytes || spares.keepers == 0) {
    return Block(new uint8_t[std::max<size_t>(bytes, 1)], BlockRelease{0});
  }
  int best = -1;
  for (int i = 0; i < 2; ++i) {
    if (spares.blocks[i] != nullptr && spares.bytes[i] >= bytes &&
        (best < 0 || spares.bytes[i] < spares.bytes[best])) {
      best = i;
    }
  }
  if (best >= 0) {
    const size_t held = std::exchange(spares.bytes[best], 0);
    return Block(std::exchange(spares.blocks[best], nullptr), BlockRelease{held});
  }
  const size_t mapped = whole_pages(bytes);
  void* block = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  return Block(static_cast<uint8_t*>(block), BlockRelease{mapped});
}

// A uint8 tensor over bytes on the comm device: the bytes themselves on the CPU, a copy on a GPU.
Tensor on_comm_device(Bytes& bytes, Device device) {
  Tensor host = Tensor::from_blob(bytes.data(), {static_cast<int64_t>(bytes.size())}, DType::UInt8,
                                  Device::cpu());
  return device.type == Device::Type::CPU ? host : host.to(device);
}

Tensor on_host(const Tensor& t) {
  return t.device().type == Device::Type::CPU ? t : t.to(Device::cpu());
}

// A payload's length and the sender's root (8 bytes each) followed by its first `carries`
// bytes (the whole payload when it fits, zeros after it), written at head.
void write_head(uint8_t* head, const Bytes& payload, uint64_t carries, int root) {
  const uint64_t length = payload.size();
  const int64_t root_field = root;
  std::memcpy(head, &length, 8);
  std::memcpy(head + 8, &root_field, 8);
  const uint64_t copied = std::min(length, carries);
  if (copied > 0) std::memcpy(head + head_preamble_bytes, payload.data(), copied);
  std::memset(head + head_preamble_bytes + copied, 0, carries - copied);
}

Bytes head_of(const Bytes& payload, uint64_t carries, int root) {
  Bytes head(head_preamble_bytes + carries);
  write_head(head.data(), payload, carries, root);
  return head;
}

uint64_t length_in(const uint8_t* head) {
  uint64_t length = 0;
  std::memcpy(&length, head, 8);
  return length;
}

int64_t root_in(const uint8_t* head) {
  int64_t root = 0;
  std::memcpy(&root, head + 8, 8);
  return root;
}

Tensor bytes_tensor(uint8_t* data, size_t bytes) {
  return Tensor::from_blob(data, {static_cast<int64_t>(bytes)}, DType::UInt8, Device::cpu());
}

// Every member's `each` bytes from mine: all-gathered (dst < 0) or gathered to dst.
Slots exchange(uint8_t* mine, size_t each, int dst, const Group& group, where_t where) {
  const Device device = comm_device();
  const bool receives = dst < 0 || get_rank(group) == dst;
  Slots slots;
  Tensor in = bytes_tensor(mine, each);
  if (device.type == Device::Type::CPU && receives) {
    const auto members = static_cast<size_t>(get_world_size(group));
    slots.block = take_block(members * each);  // uninitialized: the gather writes every byte
    slots.tensors.reserve(members);
    for (size_t r = 0; r < members; ++r) {
      slots.tensors.push_back(bytes_tensor(slots.block.get() + r * each, each));
    }
  } else if (device.type != Device::Type::CPU) {
    in = in.to(device);
  }
  if (dst < 0) {
    ranks::detail::all_gather_into(slots.tensors, in, group, where);
  } else {
    ranks::detail::gather_into(slots.tensors, in, dst, group, where);
  }
  if (device.type != Device::Type::CPU) {
    for (Tensor& t : slots.tensors) t = t.to(Device::cpu());
  }
  return slots;
}

// Every rank sees the same roots, so every rank raises the same error and none is left waiting.
void check_same_dst(const std::vector<int64_t>& roots, const Group& group, std::string_view op,
                    where_t where) {
  std::map<int64_t, std::vector<size_t>> ranks_by_root;
  for (size_t r = 0; r < roots.size(); ++r) ranks_by_root[roots[r]].push_back(r);
  if (ranks_by_root.size() <= 1) return;
  std::vector<std::string> sides;
  for (const auto& [root, members] : ranks_by_root) {
    sides.push_back(fmt::format("{} {} gave {}", members.size() == 1 ? "rank" : "ranks",
                                fmt::join(members, ","), root));
  }
  throw Mismatch(fmt::format(
      "mismatched {} on group '{}' at {}: the ranks name different dst: {} (rank {} here)", op,
      group.name(), ranks::detail::where_str(where), fmt::join(sides, "; "), get_rank(group)));
}

// Every member's payload length and root when heads carry no payload: an all_reduce (sum) of
// two int64 per member, each member filling its own pair and zeros elsewhere. Each rank holds
// one tensor of 16·N bytes where an all_gather of heads gives it N tensors (4 M of them over
// 2,048 simulated ranks).
std::pair<std::vector<uint64_t>, std::vector<int64_t>> lengths_and_roots(uint64_t length, int root,
                                                                         const Group& group,
                                                                         where_t where) {
  const auto members = static_cast<size_t>(get_world_size(group));
  const auto me = static_cast<size_t>(get_rank(group));
  Tensor table = Tensor::zeros({static_cast<int64_t>(2 * members)}, DType::Int64, Device::cpu());
  auto* cells = static_cast<int64_t*>(table.data_ptr());
  cells[2 * me] = static_cast<int64_t>(length);
  cells[2 * me + 1] = root;
  const Device device = comm_device();
  Tensor moved = device.type == Device::Type::CPU ? table : table.to(device);
  all_reduce(moved, ReduceOp::Sum, group, where);
  const Tensor summed = on_host(moved);
  const auto* sums = static_cast<const int64_t*>(summed.data_ptr());
  std::vector<uint64_t> lengths(members);
  std::vector<int64_t> roots(members);
  for (size_t r = 0; r < members; ++r) {
    lengths[r] = static_cast<uint64_t>(sums[2 * r]);
    roots[r] = sums[2 * r + 1];
  }
  return {std::move(lengths), std::move(roots)};
}

// Every member's head (carrying up to `carries` bytes of its payload; none when `carries` is 0)
// and payload length, the lengths (and, for a gather, the roots) checked on every rank alike.
std::pair<Slots, std::vector<uint64_t>> all_gather_heads(const Bytes& mine, const Group& group,
                                                         std::string_view op, where_t where,
                                                         uint64_t carries = eager_bytes,
                                                         int root = -1) {
  Slots heads;
  std::vector<uint64_t> lengths;
  std::vector<int64_t> roots;
  if (carries == 0) {
    std::tie(lengths, roots) = lengths_and_roots(mine.size(), root, group, where);
  } else {
    const size_t head_bytes = head_preamble_bytes + carries;
    Block head = take_block(head_bytes);
    write_head(head.get(), mine, carries, root);
    heads = exchange(head.get(), head_bytes, -1, group, where);
    for (const Tensor& t : heads.tensors) {
      lengths.push_back(length_in(static_cast<const uint8_t*>(t.data_ptr())));
      roots.push_back(root_in(static_cast<const uint8_t*>(t.data_ptr())));
    }
  }
  if (root >= 0) check_same_dst(roots, group, op, where);
  const uint64_t limit = max_payload_bytes();  // read once: a group has many members
  for (size_t r = 0; r < lengths.size(); ++r) {
    if (lengths[r] < header_bytes || lengths[r] > limit) {
      check_announced_size(lengths[r], describe_rank(static_cast<int>(r), group), op);
    }
  }
  return {std::move(heads), std::move(lengths)};
}

uint64_t largest(const std::vector<uint64_t>& lengths) {
  return lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
}

// How many payload bytes the heads of a group's next all_gather_bytes carry, from this call's
// largest payload: a little more than it (a payload that grows a bit still fits), so that a
// program gathering objects of a steady size pays one collective per call, not two (on gloo
// each collective costs a round of thread wake-ups: 0.2-1.5 ms on a busy 2-core machine).
// Payloads too large to be latency-bound go back to the two-step exchange, so that one huge
// object does not make the next calls ship huge heads.
uint64_t next_head_payload(uint64_t largest_payload) {
  constexpr uint64_t most = uint64_t{16} << 20;
  if (largest_payload <= eager_bytes || largest_payload > most) return eager_bytes;
  const uint64_t with_room = head_preamble_bytes + largest_payload + largest_payload / 16;
  return (with_room + 4095) / 4096 * 4096 - head_preamble_bytes;  // heads of whole pages
}

// Heads carry a payload along (one collective for a small object) while the exchange of heads
// stays small: every member receives every head, so a head of h bytes costs each of N members
// N·h, and a simulated run, which holds every rank's, N²·h (4 GiB for 1 KiB heads at 2,048
// ranks). Past kHeadExchangeBytes per member, heads carry only the length and the root, and the
// payloads follow in a collective of their own. Every member computes the same from the group's
// size and the same `wanted`, so they agree on whether a second collective follows.
constexpr uint64_t kHeadExchangeBytes = uint64_t{256} << 10;

uint64_t carried_along(const Group& group, uint64_t wanted) {
  const auto members = static_cast<uint64_t>(get_world_size(group));
  return members * (head_preamble_bytes + wanted) <= kHeadExchangeBytes ? wanted : 0;
}

ranks::detail::GroupImpl& impl_of(const Group& group) {
  return group.is_default() ? *current().world : *group.impl();
}

}  // namespace

KeepExchangeBlocks::KeepExchangeBlocks() { ++spares.keepers; }

// The spares stay when the last keeper goes: the next one's exchanges are what they are for.
KeepExchangeBlocks::~KeepExchangeBlocks() { --spares.keepers; }

void BlockRelease::operator()(uint8_t* block) const {
  if (bytes == 0) {  // from malloc
    delete[] block;
    return;
  }
  // Kept in place of the smaller spare (or an empty one) when not too large, else unmapped.
  const int smaller = spares.bytes[0] <= spares.bytes[1] ? 0 : 1;
  if (spares.keepers == 0 || bytes > kSpareBytes || bytes <= spares.bytes[smaller]) {
    ::munmap(block, bytes);
    return;
  }
  if (spares.blocks[smaller] != nullptr) ::munmap(spares.blocks[smaller], spares.bytes[smaller]);
  spares.blocks[smaller] = block;
  spares.bytes[smaller] = bytes;
}

Parts::Parts(Slots slots, std::vector<uint64_t> lengths, size_t offset)
    : slots_(std::move(slots)), lengths_(std::move(lengths)), offset_(offset) {}

std::span<const uint8_t> Parts::operator[](size_t rank) const {
  return {static_cast<const uint8_t*>(slots_.tensors[rank].data_ptr()) + offset_, lengths_[rank]};
}

bool alone_in(const Group& group, std::string_view op, where_t where) {
  if (!group.is_member()) {
    throw InvalidArgument(fmt::format(
        "{} at {}: this rank (global rank {}) is not a member of group '{}' (members {})", op,
        ranks::detail::where_str(where), get_rank(), group.name(),
        fmt::join(group.global_ranks(), ", ")));
  }
  return get_world_size(group) <= 1;
}

std::string describe_rank(int group_rank, const Group& group) {
  if (group.is_default()) return fmt::format("rank {}", group_rank);
  return fmt::format("rank {} of group '{}'", group_rank, group.name());
}

Parts all_gather_bytes(Bytes mine, const Group& group, std::string_view op, where_t where) {
  ranks::detail::CarryingObjects carrying;
  // Every member reads and updates the same hint from the same lengths, so they agree on the size
  // of the heads and on whether a second collective follows.
  uint64_t& carries = impl_of(group).object_head_payload;
  const uint64_t carried = carried_along(group, std::max(carries, eager_bytes));
  auto [heads, lengths] = all_gather_heads(mine, group, op, where, carried);
  carries = next_head_payload(largest(lengths));
  if (largest(lengths) <= carried) {
    return Parts(std::move(heads), std::move(lengths), head_preamble_bytes);
  }
  mine.resize(largest(lengths));  // every rank sends the same count; the padding is cut off
  return Parts(exchange(mine.data(), mine.size(), -1, group, where), std::move(lengths));
}

std::optional<Parts> gather_bytes(Bytes mine, int dst, const Group& group, std::string_view op,
                                  where_t where) {
  ranks::detail::CarryingObjects carrying;
  // Checked before anything is sent: small payloads travel in an all_gather, which has no root
  // to check, and a dst outside the group would leave every rank with nullopt.
  ranks::detail::check_root({OpKind::Gather, &impl_of(group), where, op}, dst, "dst");
  const uint64_t carried = carried_along(group, eager_bytes);
  auto [heads, lengths] = all_gather_heads(mine, group, op, where, carried, dst);
  if (largest(lengths) <= carried) {
    if (get_rank(group) != dst) return std::nullopt;
    return Parts(std::move(heads), std::move(lengths), head_preamble_bytes);
  }
  mine.resize(largest(lengths));
  Slots parts = exchange(mine.data(), mine.size(), dst, group, where);
  if (get_rank(group) != dst) return std::nullopt;
  return Parts(std::move(parts), std::move(lengths));
}

void broadcast_bytes(Bytes& payload, int src, const Group& group, std::string_view op,
                     where_t where) {
  ranks::detail::CarryingObjects carrying;
  const Device device = comm_device();
  const bool is_src = get_rank(group) == src;
  Bytes head_buffer = head_of(is_src ? payload : Bytes{}, eager_bytes, src);
  Tensor head = bytes_tensor(head_buffer.data(), head_buffer.size());
  if (device.type != Device::Type::CPU) head = head.to(device);
  broadcast(head, src, group, where);
  head = on_host(head);
  const uint64_t bytes = length_in(static_cast<const uint8_t*>(head.data_ptr()));
  check_announced_size(bytes, describe_rank(src, group), op);
  if (!is_src) payload.resize(bytes);
  if (bytes <= eager_bytes) {
    if (!is_src) {
      std::memcpy(payload.data(),
                  static_cast<const uint8_t*>(head.data_ptr()) + head_preamble_bytes, bytes);
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
  ranks::detail::CarryingObjects carrying;
  // Only the lengths are used: heads carry nothing (no N² head exchange at scale).
  const std::vector<uint64_t> lengths = all_gather_heads(mine, group, op, where, 0, dst).second;
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
