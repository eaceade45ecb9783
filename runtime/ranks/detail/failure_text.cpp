#include "ranks/detail/failure_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ranks/backend.hpp"
#include "ranks/collectives.hpp"
#include "ranks/detail/check.hpp"

namespace ranks::detail {

std::string_view format_duration_to(std::span<char, 32> out, std::chrono::nanoseconds d) {
  const auto ns = d.count();
  const auto write = [&](auto count, std::string_view unit) {
    return std::string_view(out.data(),
                            fmt::format_to_n(out.data(), out.size(), "{} {}", count, unit).size);
  };
  if (ns % 60'000'000'000 == 0 && ns != 0) return write(ns / 60'000'000'000, "min");
  if (ns % 1'000'000'000 == 0 && ns != 0) return write(ns / 1'000'000'000, "s");
  if (ns % 1'000'000 == 0 && ns != 0) return write(ns / 1'000'000, "ms");
  return write(ns, "ns");
}

std::string format_duration(std::chrono::nanoseconds d) {
  char text[32];
  return std::string(format_duration_to(text, d));
}

OpPlace place_of(const OpRequest& request, std::string_view group) {
  return OpPlace{op_label(request), group, static_cast<int64_t>(request.seq), request.where};
}

std::string describe(const OpPlace& place) {
  return fmt::format("{} on group '{}' seq {} at {}", place.op, place.group, place.seq,
                     where_str(place.where));
}

std::string peer_name(const GroupSpec& group, int group_rank) {
  if (group_rank < 0 || group_rank >= group.size()) return "another rank of the group";
  const int global = group.global_ranks()[static_cast<size_t>(group_rank)];
  if (group.name == "world") return fmt::format("rank {}", global);
  return fmt::format("group rank {} (global rank {})", group_rank, global);
}

std::string unmatched_point_to_point(OpKind kind, int peer, int tag, bool tags_match) {
  if (kind == OpKind::Send) {
    if (!tags_match) return fmt::format("rank {} has posted no matching recv", peer);
    return fmt::format("rank {} has posted no matching recv (tag {})", peer, tag);
  }
  const std::string with_tag = tags_match ? fmt::format(" with tag {}", tag) : std::string();
  if (peer == any_source) return fmt::format("no rank has sent a message{}", with_tag);
  return fmt::format("rank {} has sent no message{}", peer, with_tag);
}

std::string not_arrived(int group_size, const std::vector<int>& missing) {
  constexpr size_t shown = 16;
  const std::string names =
      missing.size() <= shown
          ? fmt::format("{}", fmt::join(missing, ", "))
          : fmt::format("{} and {} more", fmt::join(missing.begin(), missing.begin() + shown, ", "),
                        missing.size() - shown);
  return fmt::format("{} of {} ranks arrived; not arrived: {} {}",
                     group_size - static_cast<int>(missing.size()), group_size,
                     missing.size() == 1 ? "rank" : "ranks", names);
}

namespace {

// "; part" for each part that is not empty.
void append_parts(std::string& text, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) {
    if (part.empty()) continue;
    text += "; ";
    text += part;
  }
}

}  // namespace

std::string timeout_text(int rank, std::chrono::nanoseconds timeout, const OpPlace& place,
                         std::string_view details, std::string_view waits_for,
                         std::string_view consequence) {
  std::string text =
      fmt::format("rank {} timed out after {} in {}", rank, format_duration(timeout), describe(place));
  if (!details.empty()) text += fmt::format(" ({})", details);
  append_parts(text, {waits_for, consequence});
  return text;
}

std::string waited_details(std::chrono::nanoseconds waited, std::string_view backend) {
  return fmt::format("waited {:.1f} ms; {} backend",
                     std::chrono::duration<double, std::milli>(waited).count(), backend);
}

std::string lost_peer_text(int rank, std::string_view peer, std::string_view why,
                           const OpPlace& place, std::string_view consequence) {
  std::string text =
      fmt::format("rank {} lost {} ({}) while in {}", rank, peer, why, describe(place));
  append_parts(text, {consequence});
  return text;
}

std::string mismatch_text(std::string_view group, int64_t seq, std::string_view note, int rank_a,
                          std::string_view call_a, int rank_b, std::string_view call_b,
                          const std::vector<std::string>& differences) {
  return fmt::format(
      "mismatched collectives on group '{}' at seq {}{}: rank {} called {} but rank {} called {}; "
      "they differ in {}",
      group, seq, note.empty() ? std::string() : fmt::format(" ({})", note), rank_a, call_a,
      rank_b, call_b, fmt::join(differences, ", "));
}

std::string failed_earlier_text(std::string_view op, std::string_view group,
                                std::string_view first_failure) {
  return fmt::format("{}: group '{}' failed earlier and can no longer be used: {}", op, group, first_failure);
}

}  // namespace ranks::detail
