// Where the simulator notices the hazards of hazards.hpp: an op's buffers written while it is in
// flight (SimWork's hash of them, taken at posting, when the op reads and writes them, and at the
// wait), Works dropped or read before they were waited, and sends that complete only because the
// emulated library buffers them.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "ranks/capabilities.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/sim/comm.hpp"
#include "ranks/sim/engine.hpp"

namespace ranks::sim::detail {

namespace {
std::string bytes_text(size_t bytes) { return fmt::format("{} B", bytes); }
}  // namespace

void SimWork::note_changed(uint64_t now, const char* when, const std::source_location* waited_at) {
  buffers_hash = now;  // one report per change, not one per later look
  engine.hazards().note(
      HazardKind::BufferInFlight, owner.rank, op_label(request), request.where, [&] {
        const BlockInfo block = info();
        std::string text =
            fmt::format("a buffer of rank {}'s {} changed while the op was in flight ({}",
                        owner.rank, ranks::detail::describe(place_of(block)), when);
        if (waited_at != nullptr) {
          text += fmt::format(" at {}", ranks::detail::where_str(*waited_at));
        }
        return text + ")" +
               ". A real backend reads and writes the buffers of an op until "
               "it completes: leave them alone between posting the op and its "
               "wait, to the program and to its other ops in flight (or copy "
               "the data first)";
      });
}

void SimWork::on_observed(const std::source_location& where) {
  if (buffers_hash == 0 || error) return;
  if (const uint64_t now = hash_buffers(request); now != buffers_hash)
    note_changed(now, "before its wait", &where);
}

void SimWork::on_read_before_completion(const char* what) const {
  if (!engine.running_here()) return;
  engine.hazards().note(
      HazardKind::UnwaitedWork, owner.rank, op_label(request), request.where, [&] {
        return fmt::format(
            "rank {} read {} of its {} posted at {} before the op completed: "
            "wait for its Work first",
            owner.rank, what, op_label(request), ranks::detail::where_str(request.where));
      });
}

SimWork::~SimWork() {
  // An op the program never waited for: reported when it ended well and the run is going on
  // (ops still pending when the run ends are its unfinished ops; a failed op's error already
  // ends the run).
  if (observed || !done || error || !engine.running_here()) return;
  engine.hazards().note(HazardKind::UnwaitedWork, owner.rank, op_label(request), request.where,
                        [&] {
                          return fmt::format(
                              "rank {} never waited for its {}: the Work was dropped without "
                              "wait() (or is_completed() seen true). A real backend may not have "
                              "finished with the buffers, and an error the op raises is lost; "
                              "wait for every Work",
                              owner.rank, ranks::detail::describe(place_of(info())));
                        });
}

uint64_t SimGroup::arrival_hash(const Arrival& arrival, const OpRequest& first) {
  // An all_reduce's members hold one tensor of one size in place: their operands are all of
  // it, and its members' works and requests stay unread. Other collectives read their requests
  // anyway.
  if (first.kind == OpKind::AllReduce) {
    return hash_operands(arrival.operands.input, arrival.operands.output, first.inputs[0].nbytes());
  }
  return hash_buffers(arrival.work->request);
}

void SimGroup::check_arrivals_untouched(const Pending& pending, const OpRequest& first) const {
  for (const Arrival& arrival : pending.arrivals) {
    if (arrival.posted_hash == 0) continue;
    const uint64_t now = arrival_hash(arrival, first);
    if (now != arrival.posted_hash) arrival.work->check_untouched_since_post(now);
  }
}

void SimGroup::rehash_arrivals(const Pending& pending, const OpRequest& first) const {
  for (const Arrival& arrival : pending.arrivals) {
    if (arrival.posted_hash != 0) arrival.work->buffers_hash = arrival_hash(arrival, first);
  }
}

bool SimGroup::buffer_send(SimWork& send) {
  const Tensor& data = send.request.inputs.front();
  const BackendCapabilities& rules = *rules_;
  const int src = global_rank(send.group_rank);
  const int dst = global_rank(send.peer());
  const bool same_node = engine_.node_of(src) == engine_.node_of(dst);
  const int64_t limit = rules.eager_send_bytes(same_node);
  if (limit <= 0 || static_cast<int64_t>(data.nbytes()) > limit) return false;
  send.check_untouched_since_post();
  // The library holds a copy: the program may reuse its buffer once the send returns.
  send.request.inputs.front() = data.clone();
  send.rehash_buffers();
  engine_.hazards().note(HazardKind::Buffering, src, "send", send.request.where, [&] {
    std::vector<std::string> hangs_on;
    for (std::string_view backend : backend_names()) {
      if (static_cast<int64_t>(data.nbytes()) > capabilities(backend).eager_send_bytes(same_node))
        hangs_on.emplace_back(backend);
    }
    return fmt::format(
        "rank {}'s send of {} to rank {} at {} completed only because {} holds a message of up "
        "to {} {} with no receive posted (its eager protocol), and the ranks it waits for wait "
        "for it. With messages over {} it hangs, and on {} at any size. Post the receive first "
        "(irecv), or order the two ranks' sends and receives",
        src, bytes_text(data.nbytes()), dst, ranks::detail::where_str(send.request.where),
        rules.backend, bytes_text(static_cast<size_t>(limit)),
        same_node ? "between ranks of one node" : "between nodes",
        bytes_text(static_cast<size_t>(limit)), fmt::join(hangs_on, " and "));
  });
  send.buffered = true;
  engine_.complete(send);
  return true;
}

bool Engine::release_buffered_sends() {
  // Only sends on a wait-for cycle: those are what the exchange needs buffered. A send whose
  // receiver waits for something else (another tag, any source, a rank that has finished) stays
  // blocked, and the deadlock report says why; nor does a run that has already failed go on.
  if (first_failure_) return false;
  bool released = false;
  for (int r : find_cycle()) {
    if (r < 0 || static_cast<size_t>(r) >= ranks_.size()) continue;
    SimRank* rank = ranks_[static_cast<size_t>(r)];
    if (rank->state != RankState::Blocked || rank->waiting_on == nullptr) continue;
    SimWork& work = *rank->waiting_on;
    if (work.op() != OpKind::Send || work.done) continue;
    if (work.group.buffer_send(work)) released = true;
  }
  return released;
}

}  // namespace ranks::sim::detail
