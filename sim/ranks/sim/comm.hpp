#pragma once
// The simulated backend: a SimComm per (rank, group) in front of one SimGroup per group, where
// collectives are matched by sequence number and point-to-point messages by (source, tag).

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ranks/backend.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/detail/line_aligned.hpp"
#include "ranks/sim/engine.hpp"
#include "ranks/sim/hazards.hpp"

namespace ranks::sim::detail {

class SimGroup;

class SimWork final : public ranks::detail::WorkState {
 public:
  // Made as a draft: the front end builds the op's request in it (SimComm::draft), and
  // submit() starts it.
  SimWork(Engine& e, SimRank& o, SimGroup& g, int rank_in_group)
      : owner(o), engine(e), group(g), group_rank(rank_in_group) {}
  // The request is complete: the op starts now, with its timeout.
  void start();
  void block() override { engine.wait(owner, *this); }
  void block_for(std::chrono::milliseconds call_timeout) override {
    // A wait can end the op sooner, never later: the op keeps its own deadline, as on gloo (and
    // in torch), where it runs with its group's timeout whoever waits for it. Both count from
    // the wait (an async op waited late gets its own timeout from then).
    if (timeout.count() <= 0 || Nanos(call_timeout) < timeout) {
      timeout = call_timeout;
      own_deadline = true;
    }
    engine.wait(owner, *this);
  }
  void on_poll() override { engine.poll(owner, *this); }
  // The program saw the op end (a wait, is_completed): its buffers must be as the op left them.
  void on_observed(const std::source_location& where) override;
  void on_read_before_completion(const char* what) const override;
  // Dropped by every handle: one that ended while the program held it, and which the program
  // never waited for, is an unwaited_work hazard.
  ~SimWork() override;

  // buffer_in_flight, at the moment the simulator reads the op's inputs or writes its outputs:
  // the buffers must still hold what they held when the op was posted. rehash_buffers() then
  // takes the hash of what the op leaves in them (after writing the outputs), which the wait
  // checks.
  void check_untouched_since_post() {
    if (buffers_hash != 0) check_untouched_since_post(hash_buffers(request));
  }
  // The same, given the buffers' hash now.
  void check_untouched_since_post(uint64_t now) {
    if (now != buffers_hash) note_changed(now, "before the op had read or written them", nullptr);
  }
  void rehash_buffers() {
    if (buffers_hash != 0) buffers_hash = hash_buffers(request);
  }

  // In the work's first line, with its shared count and WorkState's fields: what completing,
  // waiting for and freeing a work read and write (work_pool.hpp).
  SimRank& owner;
  // Of the op's buffers (hash_buffers), when the run checks buffer_in_flight and the op moves
  // data: at posting, then as the op left them; 0 when not checked (hash_buffers is never 0).
  uint64_t buffers_hash = 0;
  Engine& engine;
  SimGroup& group;
  // What reports say of the op (its name, group, seq, call site): built when asked, not kept,
  // so that the work stays a cache line smaller (the rank keeps its latest in SimRank::block).
  BlockInfo info() const;
  OpKind op() const { return request.kind; }
  // Point-to-point: the other side's group rank (or any_source); else -1.
  int peer() const { return is_point_to_point(request.kind) ? request.root : -1; }
  int tag() const { return request.tag; }

  // Packed: with the 16 bytes of its shared count a work fills exactly five cache lines.
  bool moves_data =
      false;  // the run moves data, or this op carries objects (Context::carrying_objects)
  // The timeout is the program's own: a Work::wait(timeout) call's, or a group's set shorter than
  // the run's default (Group::set_timeout). When nothing else can happen it fires, as it would in
  // a real run, instead of the run ending as a deadlock.
  bool own_deadline = false;
  bool buffered = false;  // a send the emulated library holds a copy of (buffer_send)
  int group_rank;
  Nanos started{0};
  Nanos timeout{0};
  // The op as this rank called it. The work owns it, so the tensors it holds are released when
  // the rank drops its Work handle, on its own fiber, right before its next op allocates anew;
  // freeing every rank's request at once when a collective completes defeats malloc's caches.
  OpRequest request;

 private:
  // Notes a buffer_in_flight hazard: the buffers' hash is `now`, not buffers_hash (then `now`,
  // so that one change is reported once).
  [[gnu::noinline]] void note_changed(uint64_t now, const char* when,
                                      const std::source_location* waited_at);
};

// A pooled work's block: the 16 bytes of its shared count (work_pool.hpp), then the work. What
// prefetching a work must load, from a pointer that may be stale (a prefetch never faults).
inline constexpr size_t kWorkCountBytes = 16;
inline const char* work_block(const SimWork* work) {
  return reinterpret_cast<const char*>(work) - kWorkCountBytes;
}

// Where a member's first input and first output keep their bytes (null where it has none),
// taken when it arrives at a collective, while its request is in cache. An all_reduce is
// computed through these alone: at 16,384 ranks the last arrival would otherwise read two or
// three lines of every member's request, long out of cache, only to find its 8 bytes. (The
// other collectives still read the requests: lists of tensors, rarer at that scale.)
struct OperandBytes {
  const void* input = nullptr;
  void* output = nullptr;
};

// One simulated group, shared by all its members.
class SimGroup {
 public:
  // `rules`: the backend the group emulates, the run's or, for new_group(ranks, backend), that
  // one's.
  SimGroup(Engine& engine, GroupSpec spec, const BackendCapabilities& rules);
  const std::string& name() const { return spec_.name; }
  const BackendCapabilities& rules() const { return *rules_; }
  // The program chose other rules before any op (Engine::adopt_backend).
  void adopt_rules(const BackendCapabilities& rules) { rules_ = &rules; }
  int size() const { return spec_.size(); }
  int global_rank(int group_rank) const {
    return (*spec_.members)[static_cast<size_t>(group_rank)];
  }

  // A collective. Inlined into SimComm::submit, its only caller: one frame fewer on every op.
  [[gnu::always_inline]] inline void arrive(std::shared_ptr<SimWork>&& work);
  void post_send(std::shared_ptr<SimWork>&& work);
  void post_recv(std::shared_ptr<SimWork>&& work);
  // A send no receive has matched completes now on a copy of its data, if the emulated backend
  // buffers a message of its size between its two ranks (hazard_checks.cpp); else false.
  bool buffer_send(SimWork& send);
  // The rank stopped waiting (timeout, stuck run): forget its half of the operation.
  void withdraw(const SimWork& work);
  // Who the work still waits for ("not arrived: ranks 2, 3"), for timeout and deadlock reports.
  std::string describe_missing(const SimWork& work) const;
  // The global ranks the work waits for: the wait-for graph's edges.
  std::vector<int> waiting_for(const SimWork& work) const;
  // Whether the work cannot finish without global rank `global` (which has died).
  bool involves(const SimWork& work, int global) const;

  // The run is over. Ops still pending end with an error (a Work kept past the run reports it
  // instead of reaching into the finished engine), and later calls on the group are refused.
  // Appends a line for each op a rank started that never completed.
  void close(std::vector<std::string>& unfinished);
  bool closed() const { return closed_; }

  // A rank's op on this group timed out (`why` says which, where): what the emulated backend
  // leaves of the group (AfterTimeout). gloo closes it: every other member's pending op fails
  // now and later ops fail at once; nccl refuses the rank's further ops, Open MPI its further
  // collectives.
  void after_timeout(const SimWork& timed_out, const std::string& why);
  // Whether submit must ask check_refusal first (the run ended, or a timeout left its mark).
  bool refusing() const { return refusing_; }  // one load on every op: close() sets it too
  // Throws the error the real backend would give `request` of group rank `rank`, if any.
  [[gnu::noinline]] void check_refusal(int rank, const OpRequest& request) const;

 private:
  struct Arrival {
    std::shared_ptr<SimWork> work;
    OperandBytes operands;
    // The work's buffers_hash as posted (0: not checked), taken with the operands: finish()
    // checks an all_reduce's buffers without reading its members' works.
    uint64_t posted_hash = 0;
  };
  struct Pending {
    int arrived = 0;
    int first = -1;  // group rank of the first arrival: the reference for mismatch checks
    std::vector<Arrival> arrivals;
    std::exception_ptr failed;  // a mismatch: every arrival (late ones too) gets it
  };
  // buffer_in_flight, as the last arrival reads every member's buffers (before) and has
  // written them (after); see SimWork::check_untouched_since_post.
  void check_arrivals_untouched(const Pending& pending, const OpRequest& first) const;
  void rehash_arrivals(const Pending& pending, const OpRequest& first) const;
  // The hash_buffers of an arrival's buffers as they are now.
  static uint64_t arrival_hash(const Arrival& arrival, const OpRequest& first);
  struct Message {
    std::shared_ptr<SimWork> work;
  };
  // At one destination. Vectors, not deques: an empty deque allocates, and a 100,000-rank group
  // has 100,000 mailboxes that mostly stay empty.
  struct Mailbox {
    std::vector<Message> sends;
    std::vector<Message> recvs;
  };

  void finish(uint64_t seq, Pending& pending);
  // Fails the collective when the work's call differs from the first arrival's (out of line:
  // arrive's frame is on every rank's stack for every op).
  [[gnu::noinline]] bool rejected_as_mismatch(uint64_t seq, Pending& pending, SimWork& work);
  // A rank arriving at a collective that has already failed gets its error (out of line, for
  // the same reason: the error's copy took a slot of arrive's frame).
  [[gnu::noinline]] void fail_late_arrival(SimWork& work, const Pending& pending);
  // The first arrival's: out of line, as the vector it moves took a slot of arrive's frame.
  [[gnu::noinline]] void take_arrival_slots(Pending& pending);
  void match(Message& send, Message& recv);

  // Whether the emulated backend selects messages by tag (NCCL does not).
  bool tag_matches(const OpRequest& send, const OpRequest& recv) const {
    return !matches_tags_ || send.tag == recv.tag;
  }

  Engine& engine_;
  GroupSpec spec_;
  bool matches_tags_;
  bool closed_ = false;
  bool refusing_ = false;
  std::string closed_by_;             // gloo, nccl: the timeout that closed the group
  int closed_by_rank_ = -1;           // its group rank
  std::vector<std::string> refused_;  // nccl, mpi: per group rank, why its ops are refused
  std::map<uint64_t, Pending> pending_;
  // The collective most ranks are arriving at: in lock-step programs every arrival but the
  // first finds it here instead of walking the map.
  std::map<uint64_t, Pending>::iterator recent_ = pending_.end();
  // Inline where it finds the collective most ranks arrive at: called from arrive(), whose
  // deepest calls set how many stack lines every op touches.
  Pending& pending_at(uint64_t seq) {
    if (recent_ != pending_.end() && recent_->first == seq) return recent_->second;
    return pending_at_new(seq);
  }
  [[gnu::noinline]] Pending& pending_at_new(uint64_t seq);
  // Arrival vectors of finished collectives, kept for reuse: a collective on 16,384 ranks would
  // otherwise allocate (and fault in) a fresh multi-megabyte vector every time.
  std::vector<std::vector<Arrival>> spare_slots_;
  // What finish() hands execute_collective, reused: fresh ones per collective cost allocations.
  std::vector<const OpRequest*> request_scratch_;
  std::vector<OperandBytes> operand_scratch_;
  std::vector<Mailbox> mailboxes_;
  // Last: read only on the rare paths (refusals, timeouts, buffering, messages), so the fields
  // every op reads keep their places.
  const BackendCapabilities* rules_;
};

// All groups of one run, by name, so that every member's SimComm finds the same SimGroup.
class GroupRegistry {
 public:
  explicit GroupRegistry(Engine& engine) : engine_(engine) {}
  // The group named spec.name, made under `rules` by its first member to ask.
  std::shared_ptr<SimGroup> get(const GroupSpec& spec, const BackendCapabilities& rules);
  // SimGroup::close for every group of the run.
  std::vector<std::string> close_all();

 private:
  Engine& engine_;
  std::map<std::string, std::shared_ptr<SimGroup>> groups_;
};

// Line-aligned, hot fields first: every op reads the group, the engine and both ranks, and takes
// the draft.
class alignas(64) SimComm final : public Backend, public ranks::detail::LineAlignedNew {
 public:
  SimComm(Engine& engine, GroupRegistry& registry, std::shared_ptr<SimGroup> group, int rank,
          int global_rank);
  std::string_view name() const override { return "sim"; }
  // The request of a new pooled work: an op's request is written once, where the op keeps it.
  OpRequest& draft() override;
  Work submit(OpRequest&& request) override;
  std::unique_ptr<Backend> create_subgroup(const GroupSpec& spec) override;
  std::unique_ptr<Backend> create_side_group(const GroupSpec& spec,
                                             std::string_view backend) override;
  std::unique_ptr<Backend> create_member_group(const GroupSpec& spec,
                                               std::shared_ptr<Store> store) override;

 private:
  // The work draft() handed out, until submit() starts it. One left by an op whose checks
  // threw is cleared and handed out again.
  std::shared_ptr<SimWork> draft_;
  std::shared_ptr<SimGroup> group_;
  Engine& engine_;
  int rank_;         // within the group
  int global_rank_;  // in the world
  GroupRegistry& registry_;
};

// Marks a work that the run ended before completing as done, with the error a later wait()
// rethrows; returns the line reports give it.
std::string end_unfinished(SimWork& work);

// The cost model's price of a matched collective (its first arrival's request) and of a matched
// message between two group ranks (pricing.cpp).
Nanos collective_cost(const Engine& engine, const SimGroup& group, const OpRequest& first);
Nanos message_cost(const Engine& engine, const SimGroup& group, int src, int dst, size_t bytes);

// Computes a matched collective's results into the arrivals' output tensors (one request per
// group rank, in group-rank order; `operands` the same ranks' OperandBytes). Reductions fold in
// rank order, so results are exact and the same on every run. With move_data false only the
// cross-rank size checks run. Throws Mismatch when all_to_all's per-pair sizes disagree.
void execute_collective(OpKind op, ReduceOp reduce_op, int root,
                        const std::vector<const OpRequest*>& requests,
                        const std::vector<OperandBytes>& operands, bool move_data);

}  // namespace ranks::sim::detail
