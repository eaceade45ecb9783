#pragma once
// The hazards a run passes through without failing: what real backends do not promise to
// survive (a buffer written while its op is in flight, a Work never waited, an exchange that
// completes only because the library buffers it). The engine notes them here as they happen;
// each call site's occurrences fold into one entry, so a loop that drops a Work every iteration
// makes one line, with its count.

#include <algorithm>
#include <cstdint>
#include <map>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ranks/op.hpp"
#include "ranks/sim.hpp"

namespace ranks::sim::detail {

enum class HazardKind { BufferInFlight, UnwaitedWork, Buffering };
std::string_view hazard_name(HazardKind kind);

class HazardLog {
 public:
  // InvalidArgument for a name that is not one of hazard_kinds().
  explicit HazardLog(const std::vector<std::string>& accepted);

  // Whether ops' buffers are hashed to catch writes while in flight (off when that kind is
  // accepted: the check costs two passes over every op's bytes).
  bool checks_buffers() const {
    return !accepted_[static_cast<size_t>(HazardKind::BufferInFlight)];
  }

  // One occurrence: `message` is built only for the first at its call site.
  template <class Message>
  void note(HazardKind kind, int rank, std::string_view op, const std::source_location& where,
            Message&& message) {
    Entry& entry = entry_for(kind, op, where);
    if (entry.occurrences++ == 0) entry.message = message();
    if (std::find(entry.ranks.begin(), entry.ranks.end(), rank) == entry.ranks.end()) {
      if (entry.ranks.size() < kShownRanks) {
        entry.ranks.push_back(rank);
      } else {
        entry.more_ranks = true;
      }
    }
  }

  // Whether any hazard of a kind not accepted happened: the run's outcome is then hazard.
  bool any_unaccepted() const;
  std::vector<Hazard> report() const;

 private:
  static constexpr size_t kShownRanks = 8;
  struct Entry {
    HazardKind kind;
    std::string op;
    std::string where;
    std::string message;
    std::vector<int> ranks;  // the first kShownRanks distinct ones
    bool more_ranks = false;
    int64_t occurrences = 0;
    size_t order = 0;  // entries are reported in the order they first happened
  };
  Entry& entry_for(HazardKind kind, std::string_view op, const std::source_location& where);

  bool accepted_[3] = {false, false, false};
  std::map<std::tuple<int, std::string, uint32_t, std::string>, Entry> entries_;
};

// A hash of the bytes of every tensor the op reads or writes (inputs, then outputs); never 0.
uint64_t hash_buffers(const OpRequest& request);
// hash_buffers of an op with one input and one output of `bytes` each (an all_reduce), from
// their bytes alone.
uint64_t hash_operands(const void* input, const void* output, size_t bytes);

}  // namespace ranks::sim::detail
