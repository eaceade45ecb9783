#include "ranks/sim/hazards.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "ranks/detail/check.hpp"
#include "ranks/errors.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ranks::sim {

namespace {
constexpr std::array<std::string_view, 3> kinds = {"buffer_in_flight", "unwaited_work",
                                                   "buffering"};
}  // namespace

std::span<const std::string_view> hazard_kinds() { return kinds; }

}  // namespace ranks::sim

namespace ranks::sim::detail {

std::string_view hazard_name(HazardKind kind) { return kinds[static_cast<size_t>(kind)]; }

HazardLog::HazardLog(const std::vector<std::string>& accepted) {
  for (const std::string& name : accepted) {
    auto it = std::find(kinds.begin(), kinds.end(), name);
    if (it == kinds.end()) {
      throw InvalidArgument(
          fmt::format("accept: no hazard kind '{}' (the kinds: {})", name, fmt::join(kinds, ", ")));
    }
    accepted_[static_cast<size_t>(it - kinds.begin())] = true;
  }
}

HazardLog::Entry& HazardLog::entry_for(HazardKind kind, std::string_view op,
                                       const std::source_location& where) {
  auto key = std::make_tuple(static_cast<int>(kind), std::string(where.file_name()), where.line(),
                             std::string(op));
  auto [it, inserted] = entries_.try_emplace(std::move(key));
  if (inserted) {
    it->second.kind = kind;
    it->second.op = op;
    it->second.where = ranks::detail::where_str(where);
    it->second.order = entries_.size();
  }
  return it->second;
}

bool HazardLog::any_unaccepted() const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const auto& item) {
    return !accepted_[static_cast<size_t>(item.second.kind)];
  });
}

std::vector<Hazard> HazardLog::report() const {
  std::vector<const Entry*> ordered;
  for (const auto& [key, entry] : entries_) ordered.push_back(&entry);
  std::sort(ordered.begin(), ordered.end(),
            [](const Entry* a, const Entry* b) { return a->order < b->order; });
  std::vector<Hazard> hazards;
  for (const Entry* entry : ordered) {
    Hazard hazard;
    hazard.kind = hazard_name(entry->kind);
    hazard.message = entry->message;
    if (entry->occurrences > 1) {
      hazard.message +=
          fmt::format(" ({} times at this call site, on rank{} {}{})", entry->occurrences,
                      entry->ranks.size() == 1 ? "" : "s", fmt::join(entry->ranks, ", "),
                      entry->more_ranks ? ", ..." : "");
    }
    hazard.ranks = entry->ranks;
    hazard.ops = {entry->op};
    hazard.where = {entry->where};
    hazard.occurrences = entry->occurrences;
    hazard.accepted = accepted_[static_cast<size_t>(entry->kind)];
    hazards.push_back(std::move(hazard));
  }
  return hazards;
}

uint64_t hash_buffers(const OpRequest& request) {
  uint64_t hash = 0;
  for (const TensorList* list : {&request.inputs, &request.outputs}) {
    for (const Tensor& tensor : *list) {
      if (tensor.nbytes() > 0)
        hash = XXH3_64bits_withSeed(tensor.data_ptr(), tensor.nbytes(), hash);
    }
  }
  return hash | 1;
}

uint64_t hash_operands(const void* input, const void* output, size_t bytes) {
  if (bytes == 0) return 1;
  return XXH3_64bits_withSeed(output, bytes, XXH3_64bits_withSeed(input, bytes, 0)) | 1;
}

}  // namespace ranks::sim::detail
