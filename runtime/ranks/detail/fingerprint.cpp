#include "ranks/detail/fingerprint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace ranks::detail {

Fingerprint fingerprint_of(const OpRequest& request) {
  Fingerprint f;
  std::memset(&f, 0, sizeof f);  // no uninitialised padding in what travels
  f.kind = request.kind;
  f.reduce_op = request.reduce_op;
  f.root = has_root(request.kind) ? request.root : -1;
  f.extra = request.extra;
  f.dtype = DType::UInt8;
  f.device = Device::Type::CPU;
  if (const Tensor* t = request.described_tensor()) {
    f.has_tensor = true;
    f.dtype = t->dtype();
    f.numel = t->numel();
    f.device = t->device().type;
  }
  f.line = request.where.line();
  std::string_view file = request.where.file_name();
  if (const auto slash = file.rfind('/'); slash != std::string_view::npos) {
    file.remove_prefix(slash + 1);
  }
  std::memcpy(f.file, file.data(), std::min(file.size(), sizeof f.file - 1));
  if (request.api != nullptr) {
    const std::string_view api = request.api;
    std::memcpy(f.api, api.data(), std::min(api.size(), sizeof f.api - 1));
  }
  return f;
}

namespace {
std::string_view device_name(Device::Type type) {
  return type == Device::Type::CPU ? "cpu" : "cuda";
}
}  // namespace

std::vector<std::string> differences(const Fingerprint& a, const Fingerprint& b) {
  std::vector<std::string> diffs;
  if (a.kind != b.kind) {
    diffs.push_back(fmt::format("op ({} vs {})", op_name(a.kind), op_name(b.kind)));
    return diffs;
  }
  if (uses_reduce_op(a.kind) && a.reduce_op != b.reduce_op) {
    diffs.push_back(fmt::format("reduce op ({} vs {})", reduce_op_name(a.reduce_op),
                                reduce_op_name(b.reduce_op)));
  }
  if (has_root(a.kind) && a.root != b.root) {
    diffs.push_back(fmt::format("root ({} vs {})", a.root, b.root));
  }
  if (a.extra != b.extra) diffs.push_back("new_group member list");
  if (a.has_tensor && b.has_tensor) {
    if (a.dtype != b.dtype) {
      diffs.push_back(fmt::format("dtype ({} vs {})", dtype_name(a.dtype), dtype_name(b.dtype)));
    }
    if (a.kind != OpKind::AllToAll && a.numel != b.numel) {
      diffs.push_back(fmt::format("element count ({} vs {})", a.numel, b.numel));
    }
    // Not the device: each rank's tensors are its own. gloo takes cpu on one rank and cuda on
    // another (cuda is staged through the host); nccl and mpi refuse the device they lack at
    // dispatch, on the rank that passes it.
  }
  return diffs;
}

std::string describe(const Fingerprint& f) {
  std::string args;
  if (uses_reduce_op(f.kind)) args += std::string(reduce_op_name(f.reduce_op)) + ", ";
  if (has_root(f.kind)) {
    const bool from = f.kind == OpKind::Broadcast || f.kind == OpKind::Scatter;
    args += fmt::format("{} {}, ", from ? "src" : "dst", f.root);
  }
  if (f.has_tensor) {
    args += fmt::format("{} x {} on {}", dtype_name(f.dtype), f.numel, device_name(f.device));
  }
  if (args.ends_with(", ")) args.resize(args.size() - 2);
  const std::string_view api(f.api, strnlen(f.api, sizeof f.api));
  return fmt::format("{}{}{}({}) at {}:{}", api, api.empty() ? "" : "'s ", op_name(f.kind), args,
                     f.file, f.line);
}

}  // namespace ranks::detail
