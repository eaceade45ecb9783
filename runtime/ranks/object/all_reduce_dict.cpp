// all_reduce_dict: MMEngine's one flattened all_reduce over sorted keys, with the check MMEngine
// lacks: ranks whose keys, shapes or dtypes differ would reduce unrelated numbers into each other,
// so a fingerprint of the layout is compared first and a difference is a Mismatch on every rank.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "ranks/capabilities.hpp"
#include "ranks/context.hpp"
#include "ranks/detail/convert.hpp"
#include "ranks/objects.hpp"

namespace ranks {

namespace {

std::string where_text(where_t where) {
  return fmt::format("{}:{}", std::filesystem::path(where.file_name()).filename().string(),
                     where.line());
}

// "loss: float32[2], top1: int64[]": what must agree across ranks.
std::string describe_layout(const std::map<std::string, Tensor>& data) {
  std::vector<std::string> entries;
  for (const auto& [key, value] : data) {
    entries.push_back(
        fmt::format("{}: {}[{}]", key, dtype_name(value.dtype()), fmt::join(value.shape(), ", ")));
  }
  return fmt::format("{{{}}}", fmt::join(entries, ", "));
}

int64_t fingerprint(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  return static_cast<int64_t>(h);
}

// Every rank learns whether the layouts agree; when they do not, every rank raises the same
// Mismatch listing each layout with the ranks that hold it.
void check_same_layout(const std::string& layout, const Group& group, where_t where) {
  detail::CarryingObjects carrying;
  std::vector<Tensor> prints =
      all_gather(Tensor::of<int64_t>({fingerprint(layout)}, comm_device()), group, where);
  bool same = true;
  for (const Tensor& p : prints) {
    same = same && p.to(Device::cpu()).item<int64_t>() == fingerprint(layout);
  }
  if (same) return;
  std::vector<std::string> layouts = all_gather_object(layout, group, where);
  std::vector<std::string> lines;
  std::vector<bool> listed(layouts.size(), false);
  for (size_t r = 0; r < layouts.size(); ++r) {
    if (listed[r]) continue;
    std::vector<size_t> holders;
    for (size_t s = r; s < layouts.size(); ++s) {
      if (layouts[s] == layouts[r]) {
        holders.push_back(s);
        listed[s] = true;
      }
    }
    lines.push_back(fmt::format("rank{} {} {}", holders.size() > 1 ? "s" : "",
                                fmt::join(holders, ","), layouts[r]));
  }
  throw Mismatch(fmt::format(
      "all_reduce_dict on group '{}' at {}: the ranks hold different keys, shapes or dtypes: {}",
      group.name(), where_text(where), fmt::join(lines, "; ")));
}

}  // namespace

void all_reduce_dict(std::map<std::string, Tensor>& data, ReduceOp op, const Group& group,
                     where_t where) {
  if (object::alone_in(group, "all_reduce_dict", where)) return;
  detail::ObjectCallScope call("all_reduce_dict", group, where);
  std::optional<Device> device;
  DType promoted = DType::Bool;
  int64_t total = 0;
  for (const auto& [key, value] : data) {
    if (!value.defined()) {
      throw InvalidArgument(fmt::format("all_reduce_dict at {}: the value of '{}' is undefined",
                                        where_text(where), key));
    }
    if (device && !(value.device() == *device)) {
      throw InvalidArgument(
          fmt::format("all_reduce_dict at {}: the values are on different devices ('{}' is {})",
                      where_text(where), key, value.str()));
    }
    device = value.device();
    promoted = promote_types(promoted, value.dtype());
    total += value.numel();
  }
  check_same_layout(describe_layout(data), group, where);
  if (data.empty()) return;

  // Flattened on the host in key order, converted to the promoted dtype.
  Tensor flat = Tensor::empty({total}, promoted, Device::cpu());
  auto* cursor = static_cast<uint8_t*>(flat.data_ptr());
  for (const auto& [key, value] : data) {
    Tensor host = value.to(Device::cpu());
    detail::convert(host.data_ptr(), host.dtype(), cursor, promoted, host.numel());
    cursor += static_cast<size_t>(host.numel()) * dtype_size(promoted);
  }
  if (device->type != Device::Type::CPU) flat = flat.to(*device);
  all_reduce(flat, op, group, where);
  if (device->type != Device::Type::CPU) flat = flat.to(Device::cpu());

  // Each key gets a new tensor (the caller's tensors are not written, as in MMEngine).
  const auto* read = static_cast<const uint8_t*>(flat.data_ptr());
  for (auto& [key, value] : data) {
    Tensor result = Tensor::empty(value.shape(), promoted, Device::cpu());
    std::memcpy(result.data_ptr(), read, result.nbytes());
    read += result.nbytes();
    value = device->type == Device::Type::CPU ? result : result.to(*device);
  }
}

void all_reduce_dict(std::map<std::string, Tensor>& data, std::string_view op, const Group& group,
                     where_t where) {
  all_reduce_dict(data, parse_reduce_op(op), group, where);
}

}  // namespace ranks
