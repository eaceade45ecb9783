#pragma once
// The failure texts of every backend and of the simulator, written in one place so that a
// program's Timeout, RankFailure or Mismatch reads the same whether it ran simulated or for
// real. Each text starts with the rank and where the op stands, then says what it waited for,
// then what the failure leaves of the group:
//
//   rank 1 timed out after 200 ms in all_reduce on group 'world' seq 3 at train.cpp:10
//     (waited 200.4 ms; gloo backend); 3 of 4 ranks arrived; not arrived: rank 2; <consequence>
//   rank 0 lost rank 2 (<why>) while in all_reduce on group 'world' seq 3 at train.cpp:10;
//     <consequence>
//   mismatched collectives on group 'world' at seq 3: rank 0 called <a> but rank 1 called <b>;
//     they differ in <fields>
//   all_reduce on group 'world' seq 4 at train.cpp:11: group 'world' failed earlier and can no
//     longer be used: <first>

#include <chrono>
#include <cstdint>
#include <exception>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/op.hpp"

namespace ranks {
struct GroupSpec;
}

namespace ranks::detail {

// A duration in the largest unit that divides it: "30 min", "5 s", "250 ms", "17 ns" ("0 ns").
// The span form writes into out and allocates nothing (the simulator's crash report writes it
// from a signal handler); 32 characters hold any duration.
std::string_view format_duration_to(std::span<char, 32> out, std::chrono::nanoseconds d);
std::string format_duration(std::chrono::nanoseconds d);

// Where an op stands, as every failure text places it.
struct OpPlace {
  std::string_view op;     // op_label(): "all_reduce", or the object collective it is part of
  std::string_view group;  // the group's name
  int64_t seq = -1;
  std::source_location where;
};
OpPlace place_of(const OpRequest& request, std::string_view group);
// "all_reduce on group 'world' seq 3 at train.cpp:10"
std::string describe(const OpPlace& place);

// A group rank as messages name it: "rank 3" on the world group, "group rank 1 (global rank 3)"
// on another, "another rank of the group" when out of range (any_source, a corrupt peer).
std::string peer_name(const GroupSpec& group, int group_rank);

// What an unmatched send or receive waits for, the peer by its global rank (any_source: any):
// "rank 1 has sent no message with tag 0", "no rank has sent a message with tag 0",
// "rank 1 has posted no matching recv (tag 0)"; without the tag where the backend does not match
// messages by tag (BackendCapabilities::matches_tags).
std::string unmatched_point_to_point(OpKind kind, int peer, int tag, bool tags_match = true);
// Who a collective waits for: "3 of 4 ranks arrived; not arrived: rank 2" (16 named at most).
std::string not_arrived(int group_size, const std::vector<int>& missing);

// "rank 1 timed out after 200 ms in <place>[ (<details>)][; <waits_for>][; <consequence>]":
// details say what only a real run knows ("waited 200.4 ms; gloo backend").
std::string timeout_text(int rank, std::chrono::nanoseconds timeout, const OpPlace& place,
                         std::string_view details, std::string_view waits_for,
                         std::string_view consequence);
// The details a real backend's Timeout carries: "waited 200.4 ms; gloo backend".
std::string waited_details(std::chrono::nanoseconds waited, std::string_view backend);

// "rank 0 lost <peer> (<why>) while in <place>[; <consequence>]", peer as peer_name() says it.
std::string lost_peer_text(int rank, std::string_view peer, std::string_view why,
                           const OpPlace& place, std::string_view consequence);

// "mismatched collectives on group 'g' at seq 3[ (<note>)]: rank 0 called <a> but rank 1 called
// <b>; they differ in <differences>"
std::string mismatch_text(std::string_view group, int64_t seq, std::string_view note, int rank_a,
                          std::string_view call_a, int rank_b, std::string_view call_b,
                          const std::vector<std::string>& differences);

// "<op>: group 'g' failed earlier and can no longer be used: <first failure>"
std::string failed_earlier_text(std::string_view op, std::string_view group,
                                std::string_view first_failure);

}  // namespace ranks::detail
