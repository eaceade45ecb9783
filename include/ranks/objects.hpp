#pragma once
// Object collectives and MMEngine's helpers. T is anything cereal can write: arithmetic types,
// strings, standard containers, std::variant, std::optional, user types with a serialize()
// member (see <ranks/object/archive.hpp> for the types included). Objects travel as payloads
// (<ranks/object/payload.hpp>) through the tensor collectives, so these run on every backend.
//
// Where MMEngine has traps, these do not: lengths are exchanged and checked before anything is
// allocated; a rank with a different key set in all_reduce_dict is a Mismatch on every rank;
// collect_results never drops a value (there is no "None" to filter) and gathers to the root.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/collectives.hpp"
#include "ranks/context.hpp"
#include "ranks/init.hpp"
#include "ranks/object/collect.hpp"
#include "ranks/object/exchange.hpp"

namespace ranks {

// Every rank draws from its own generator (in its Context; seeded per rank in the simulator,
// from the OS in real runs); rank 0 of the group's draw, in [0, 2^31), is returned on all.
int64_t sync_random_seed(const Group& = {}, where_t where = where_t::current());

// src's list, on every member: the others' lists are replaced (resized to src's length: the
// lists need not have the same length, unlike MMEngine's). src's list is not touched.
template <class T>
void broadcast_object_list(std::vector<T>& data, int src = 0, const Group& group = {},
                           where_t where = where_t::current()) {
  if (object::alone_in(group, "broadcast_object_list", where)) return;
  detail::ObjectCallScope call("broadcast_object_list", group, where);
  const bool is_src = get_rank(group) == src;
  object::Bytes payload = is_src ? object::encode(data) : object::Bytes{};
  object::broadcast_bytes(payload, src, group, "broadcast_object_list", where);
  if (!is_src) {
    object::decode_into(payload, data, object::describe_rank(src, group));
  }
}

// Every member's object, in group-rank order, on every member. This rank's own entry is a copy
// of data (as with one rank), not data encoded and decoded again: the same value for any type
// whose serialize() writes all of it, at a third of the cost.
template <class T>
std::vector<T> all_gather_object(const T& data, const Group& group = {},
                                 where_t where = where_t::current()) {
  if (object::alone_in(group, "all_gather_object", where)) return {data};
  detail::ObjectCallScope call("all_gather_object", group, where);
  object::Parts parts =
      object::all_gather_bytes(object::encode(data), group, "all_gather_object", where);
  return object::decode_parts<T>(parts, data, get_rank(group), group);
}

// Every member's object on dst (a group rank), in group-rank order; nullopt elsewhere. dst's own
// entry is a copy of data, as in all_gather_object.
template <class T>
std::optional<std::vector<T>> gather_object(const T& data, int dst = 0, const Group& group = {},
                                            where_t where = where_t::current()) {
  if (object::alone_in(group, "gather_object", where)) return std::vector<T>{data};
  detail::ObjectCallScope call("gather_object", group, where);
  std::optional<object::Parts> parts =
      object::gather_bytes(object::encode(data), dst, group, "gather_object", where);
  if (!parts) return std::nullopt;
  return object::decode_parts<T>(*parts, data, dst, group);
}

// Sums (or op) every value across the group with one flattened all_reduce, keys in sorted
// order; values are promoted to one dtype first (torch's rules) and come back in it, on their
// own device. Ranks with different keys, shapes or dtypes get a Mismatch naming the difference.
void all_reduce_dict(std::map<std::string, Tensor>& data, ReduceOp op = ReduceOp::Sum,
                     const Group& group = {}, where_t where = where_t::current());
void all_reduce_dict(std::map<std::string, Tensor>& data, std::string_view op,
                     const Group& group = {}, where_t where = where_t::current());

// Rank 0 gets every rank's part interleaved in MMEngine's order (part 0's first element, part
// 1's first, ..., part 0's second, ...) truncated to size; other ranks get nullopt. Nothing is
// dropped: a part may hold any value. device "cpu": through a fresh directory under tmpdir
// (default ./.dist_test), which must be shared by every rank; "gpu": through the network,
// gathered to rank 0 one part at a time.
template <class T>
std::optional<std::vector<T>> collect_results(
    const std::vector<T>& part, size_t size, std::string_view device = "cpu",
    std::optional<std::filesystem::path> tmpdir = std::nullopt,
    where_t where = where_t::current()) {
  object::check_collect_args(device, tmpdir, where);
  if (get_world_size() <= 1) {
    return std::vector<T>(part.begin(), part.begin() + std::min(size, part.size()));
  }
  const Group world;
  detail::ObjectCallScope call("collect_results", world, where);
  std::vector<std::vector<T>> parts;
  auto keep = [&](int rank, std::span<const uint8_t> payload) {
    parts.emplace_back();
    object::decode_into(payload, parts.back(), object::describe_rank(rank, Group{}));
  };
  if (device == "gpu") {
    object::stream_to_root(object::encode(part), 0, Group{}, "collect_results", keep, where);
  } else {
    object::collect_through_directory(object::encode(part), tmpdir, keep, where);
  }
  if (get_rank() != 0) return std::nullopt;
  return object::interleave(std::move(parts), size);
}

}  // namespace ranks
