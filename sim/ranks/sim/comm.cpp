#include "ranks/sim/comm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ranks/capabilities.hpp"
#include "ranks/collectives.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/detail/fingerprint.hpp"
#include "ranks/errors.hpp"

namespace ranks::sim::detail {

using ranks::detail::where_str;

namespace {

// Whether two ranks' calls of one collective agree: the cheap test every arrival takes.
bool agree(const OpRequest& a, const OpRequest& b) {
  if (a.kind != b.kind || a.reduce_op != b.reduce_op || a.root != b.root || a.extra != b.extra) {
    return false;
  }
  const Tensor* ta = a.described_tensor();
  const Tensor* tb = b.described_tensor();
  if (ta == nullptr || tb == nullptr) return ta == tb;
  return ta->dtype() == tb->dtype() && (a.kind == OpKind::AllToAll || ta->numel() == tb->numel());
}


}  // namespace

namespace {
// Writes each field in place. Built as a BlockInfo and copied into SimRank::block, its 64 bytes
// would be stored in pieces of 4 and 8 and read back 16 at a time, which the store buffer cannot
// forward: each op would then wait for every older store to reach the cache, cold lines
// included (a fifth of a 16,384-rank all_reduce: reports/simulator.md).
// Inlined into submit: as a call of its own, with op_label's below it, it would be the deepest
// frame of every op (see SimGroup::pending_at).
[[gnu::always_inline]] inline void describe_block_into(BlockInfo& info, const OpRequest& request,
                                                       const SimGroup& group) {
  info.op = op_label(request);
  info.group = &group.name();
  info.seq = static_cast<int64_t>(request.seq);
  info.where = request.where;
  info.peer = no_peer;
  if (is_point_to_point(request.kind) || has_root(request.kind)) {
    info.peer = request.root == any_source ? any_source : group.global_rank(request.root);
  }
  info.count = -1;
  info.dtype = DType::Float32;
  if (const Tensor* t = request.described_tensor()) {
    info.count = t->numel();
    info.dtype = t->dtype();
  }
}
}  // namespace

namespace {
// An op's price on the virtual clock, or 0 with `error` set when the model gives one the clock
// cannot hold: the op then fails on every member, as a mismatch does.
template <class Price>
Nanos price_or_fail(const Engine& engine, std::exception_ptr& error, Price price) {
  if (!engine.priced() || error) return Nanos{0};
  try {
    return price();
  } catch (const InvalidArgument&) {
    error = std::current_exception();
    return Nanos{0};
  }
}
}  // namespace

void SimWork::start() {
  moves_data = engine.options().move_data || owner.context.carrying_objects > 0;
  own_deadline = request.timeout.count() > 0 && request.timeout < engine.options().timeout;
  started = engine.now();
  timeout = request.timeout;
  // Only async ops with buffers: the program cannot touch a blocking call's buffers while it
  // waits in it, and a barrier's arrivals are then never read back for the check.
  const bool hashes = moves_data && !request.blocking &&
                      (!request.inputs.empty() || !request.outputs.empty()) &&
                      engine.hazards().checks_buffers();
  buffers_hash = hashes ? hash_buffers(request) : 0;
}

BlockInfo SimWork::info() const {
  BlockInfo info;
  describe_block_into(info, request, group);
  return info;
}

SimGroup::SimGroup(Engine& engine, GroupSpec spec, const BackendCapabilities& rules)
    : engine_(engine),
      spec_(std::move(spec)),
      matches_tags_(rules.matches_tags),
      mailboxes_(spec_.global_ranks().size()),
      rules_(&rules) {}

inline void SimGroup::arrive(std::shared_ptr<SimWork>&& work) {
  const OpRequest& request = work->request;
  const uint64_t seq = request.seq;
  Pending& pending = pending_at(seq);
  if (pending.failed) {
    fail_late_arrival(*work, pending);
    return;
  }
  if (pending.arrivals.empty()) take_arrival_slots(pending);
  const int me = work->group_rank;
  if (pending.first >= 0) {
    const OpRequest& reference = pending.arrivals[static_cast<size_t>(pending.first)].work->request;
    if (!agree(reference, request) && rejected_as_mismatch(seq, pending, *work)) return;
  } else {
    pending.first = me;
  }
  TensorList& outputs = work->request.outputs;
  const OperandBytes operands{request.inputs.empty() ? nullptr : request.inputs[0].data_ptr(),
                              outputs.empty() ? nullptr : outputs[0].data_ptr()};
  Arrival& arrival = pending.arrivals[static_cast<size_t>(me)];
  arrival.posted_hash = work->buffers_hash;
  arrival.work = std::move(work);
  arrival.operands = operands;
  if (++pending.arrived == size()) finish(seq, pending);
}

void SimGroup::fail_late_arrival(SimWork& work, const Pending& pending) {
  engine_.complete(work, pending.failed);
}

bool SimGroup::rejected_as_mismatch(uint64_t seq, Pending& pending, SimWork& work) {
  const OpRequest& reference = pending.arrivals[static_cast<size_t>(pending.first)].work->request;
  const OpRequest& request = work.request;
  // Built only once the cheap agree() has failed; worded as the real backends' RANKS_DEBUG=detail
  // check words it.
  const auto expected = ranks::detail::fingerprint_of(reference);
  const auto got = ranks::detail::fingerprint_of(request);
  std::vector<std::string> diffs = ranks::detail::differences(expected, got);
  if (diffs.empty()) return false;
  std::string message = ranks::detail::mismatch_text(
      name(), static_cast<int64_t>(seq), {}, global_rank(pending.first),
      ranks::detail::describe(expected), global_rank(work.group_rank), ranks::detail::describe(got),
      diffs);
  engine_.note_mismatch(message);
  auto error = std::make_exception_ptr(Mismatch(std::move(message)));
  pending.failed = error;
  for (Arrival& arrival : pending.arrivals) {
    if (arrival.work) engine_.complete(*arrival.work, error);
    arrival = Arrival{};
  }
  engine_.complete(work, error);
  return true;
}

void SimGroup::finish(uint64_t seq, Pending& pending) {
  std::vector<const OpRequest*>& requests = request_scratch_;
  std::vector<OperandBytes>& operands = operand_scratch_;
  requests.clear();
  operands.clear();
  for (const Arrival& arrival : pending.arrivals) {
    requests.push_back(&arrival.work->request);
    operands.push_back(arrival.operands);
  }
  const OpRequest& first = *requests.front();
  const bool moves = pending.arrivals[static_cast<size_t>(pending.first)].work->moves_data;
  std::exception_ptr error;
  if (moves) check_arrivals_untouched(pending, first);
  try {
    if (moves || first.kind == OpKind::AllToAll) {
      execute_collective(first.kind, first.reduce_op, first.root, requests, operands, moves);
    }
    if (moves) rehash_arrivals(pending, first);
  } catch (const Mismatch& e) {
    error = std::make_exception_ptr(Mismatch(fmt::format(
        "mismatched {} on group '{}' at seq {}: {}", op_label(first), name(), seq, e.what())));
  }
  // Completing may run no rank yet (waking only queues them), so the arrivals stay valid.
  std::vector<Arrival> arrivals = std::move(pending.arrivals);
  if (recent_ != pending_.end() && recent_->first == seq) recent_ = pending_.end();
  pending_.erase(seq);
  // Every rank leaves when the last one arrives plus the op's price: contention-free, so ranks
  // that arrived early have waited, as they would for a real collective.
  const Nanos cost =
      price_or_fail(engine_, error, [&] { return collective_cost(engine_, *this, first); });
  std::vector<std::shared_ptr<SimWork>> works;
  works.reserve(arrivals.size());
  for (Arrival& arrival : arrivals) {
    works.push_back(std::move(arrival.work));
    arrival = Arrival{};
  }
  spare_slots_.push_back(std::move(arrivals));
  if (cost.count() > 0) {
    engine_.complete_after(cost, std::move(works));
  } else {
    engine_.complete_all(std::move(works), error);
  }
}

SimGroup::Pending& SimGroup::pending_at_new(uint64_t seq) {
  recent_ = pending_.try_emplace(seq).first;
  return recent_->second;
}

void SimGroup::take_arrival_slots(Pending& pending) {
  if (spare_slots_.empty()) {
    pending.arrivals.resize(static_cast<size_t>(size()));
    return;
  }
  pending.arrivals = std::move(spare_slots_.back());
  spare_slots_.pop_back();
}

void SimGroup::post_send(std::shared_ptr<SimWork>&& work) {
  const OpRequest& request = work->request;
  const int src = work->group_rank;
  Mailbox& box = mailboxes_[static_cast<size_t>(request.root)];
  for (auto it = box.recvs.begin(); it != box.recvs.end(); ++it) {
    const OpRequest& posted = it->work->request;
    if ((posted.root == src || posted.root == any_source) && tag_matches(request, posted)) {
      Message recv = std::move(*it);
      box.recvs.erase(it);
      Message send{std::move(work)};
      match(send, recv);
      return;
    }
  }
  box.sends.push_back(Message{std::move(work)});
}

void SimGroup::post_recv(std::shared_ptr<SimWork>&& work) {
  const OpRequest& request = work->request;
  Mailbox& box = mailboxes_[static_cast<size_t>(work->group_rank)];
  // Messages from one source match in the order they were sent (MPI's non-overtaking rule);
  // among sources, FIFO takes the earliest send and a seeded run any source's first eligible one.
  std::vector<std::vector<Message>::iterator> eligible;
  std::vector<bool> seen_source(static_cast<size_t>(size()), false);
  for (auto it = box.sends.begin(); it != box.sends.end(); ++it) {
    int src = it->work->group_rank;
    if (!tag_matches(it->work->request, request)) continue;
    if (request.root != any_source && src != request.root) continue;
    if (seen_source[static_cast<size_t>(src)]) continue;
    seen_source[static_cast<size_t>(src)] = true;
    eligible.push_back(it);
    if (request.root != any_source || engine_.options().seed == 0) break;
  }
  if (eligible.empty()) {
    box.recvs.push_back(Message{std::move(work)});
    return;
  }
  auto chosen = eligible.size() == 1 ? eligible.front()
                                     : eligible[engine_.schedule_rng().next() % eligible.size()];
  Message send = std::move(*chosen);
  box.sends.erase(chosen);
  Message recv{std::move(work)};
  match(send, recv);
}

void SimGroup::match(Message& send_message, Message& recv_message) {
  SimWork& send = *send_message.work;
  SimWork& recv = *recv_message.work;
  const Tensor& in = send.request.inputs.front();
  Tensor& out = recv.request.outputs.front();
  std::exception_ptr error;
  if (send.request.tag != recv.request.tag) {
    // Only where tags are ignored (NCCL) can differently tagged messages pair: on the real
    // backend the receive would silently get this message.
    error = std::make_exception_ptr(Mismatch(fmt::format(
        "mismatched point-to-point on group '{}': {} ignores tags, so rank {}'s send (tag {}) at "
        "{} pairs with rank {}'s next receive from it, which expects tag {} at {}; post sends and "
        "receives between two ranks in the same order",
        name(), rules_->backend, global_rank(send.group_rank), send.request.tag,
        where_str(send.request.where), global_rank(recv.group_rank), recv.request.tag,
        where_str(recv.request.where))));
  } else if (in.dtype() != out.dtype() || in.numel() != out.numel()) {
    error = std::make_exception_ptr(Mismatch(fmt::format(
        "mismatched point-to-point on group '{}': rank {} sent {} (tag {}) at {} but rank {} "
        "receives into {} at {}",
        name(), global_rank(send.group_rank), in.describe(), send.request.tag,
        where_str(send.request.where), global_rank(recv.group_rank), out.str(),
        where_str(recv.request.where))));
  } else if (send.moves_data && in.nbytes() > 0) {
    send.check_untouched_since_post();
    recv.check_untouched_since_post();
    out.copy_(in);
    recv.rehash_buffers();
  }
  recv.source_rank = send.group_rank;
  const Nanos cost = price_or_fail(engine_, error, [&] {
    return message_cost(engine_, *this, send.group_rank, recv.group_rank, in.nbytes());
  });
  if (cost.count() > 0) {
    engine_.complete_after(cost, {std::move(send_message.work), std::move(recv_message.work)});
    return;
  }
  engine_.complete(send, error);
  engine_.complete(recv, error);
}

void SimGroup::withdraw(const SimWork& work) {
  if (is_point_to_point(work.op())) {
    // A send waits in its destination's mailbox, a receive in its own.
    Mailbox& box =
        mailboxes_[static_cast<size_t>(work.op() == OpKind::Send ? work.peer() : work.group_rank)];
    for (auto* queue : {&box.sends, &box.recvs}) {
      std::erase_if(*queue, [&](const Message& m) { return m.work.get() == &work; });
    }
    return;
  }
  auto it = pending_.find(work.request.seq);
  if (it == pending_.end()) return;
  Pending& pending = it->second;
  if (pending.arrivals.empty()) return;
  Arrival& mine = pending.arrivals[static_cast<size_t>(work.group_rank)];
  if (mine.work.get() != &work) return;
  mine = Arrival{};
  --pending.arrived;
  if (pending.first == work.group_rank) {
    // Any remaining arrival can be the reference. Searching on from the withdrawn one keeps a
    // stuck run's unwinding (ranks leave in order) linear rather than quadratic.
    const size_t n = pending.arrivals.size();
    pending.first = -1;
    for (size_t k = 1; k < n && pending.arrived > 0; ++k) {
      size_t r = (static_cast<size_t>(work.group_rank) + k) % n;
      if (pending.arrivals[r].work) {
        pending.first = static_cast<int>(r);
        break;
      }
    }
  }
}

std::vector<int> SimGroup::waiting_for(const SimWork& work) const {
  if (is_point_to_point(work.op())) {
    if (work.peer() != any_source) return {global_rank(work.peer())};
    std::vector<int> everyone_else;
    for (int r = 0; r < size(); ++r) {
      if (r != work.group_rank) everyone_else.push_back(global_rank(r));
    }
    return everyone_else;
  }
  std::vector<int> missing;
  auto it = pending_.find(work.request.seq);
  if (it == pending_.end() || it->second.arrivals.empty()) return missing;
  for (size_t r = 0; r < it->second.arrivals.size(); ++r) {
    if (!it->second.arrivals[r].work) missing.push_back(global_rank(static_cast<int>(r)));
  }
  return missing;
}

bool SimGroup::involves(const SimWork& work, int global) const {
  const auto& members = spec_.global_ranks();
  auto it = std::lower_bound(members.begin(), members.end(), global);
  if (it == members.end() || *it != global) return false;
  const int r = static_cast<int>(it - members.begin());
  if (is_point_to_point(work.op())) return work.peer() == r;
  auto pending = pending_.find(work.request.seq);
  return pending != pending_.end() && !pending->second.arrivals.empty() &&
         !pending->second.arrivals[static_cast<size_t>(r)].work;
}

std::string SimGroup::describe_missing(const SimWork& work) const {
  if (is_point_to_point(work.op())) {
    const int peer = work.peer() == any_source ? any_source : global_rank(work.peer());
    return ranks::detail::unmatched_point_to_point(work.op(), peer, work.tag());
  }
  std::vector<int> missing = waiting_for(work);
  if (missing.empty()) return {};
  return ranks::detail::not_arrived(size(), missing);
}

std::string end_unfinished(SimWork& work) {
  const BlockInfo info = work.info();
  std::string what = fmt::format("rank {}'s {} on group '{}' seq {} at {}", work.owner.rank,
                                 info.op, work.group.name(), info.seq, where_str(info.where));
  if (!work.done) {
    work.error = std::make_exception_ptr(
        InvalidArgument(fmt::format("{} never completed: the simulation ended first", what)));
    work.done = true;
  }
  return what;
}

void SimGroup::close(std::vector<std::string>& unfinished) {
  closed_ = true;
  refusing_ = true;
  for (auto& [seq, pending] : pending_) {
    for (Arrival& arrival : pending.arrivals) {
      if (arrival.work && !arrival.work->done) unfinished.push_back(end_unfinished(*arrival.work));
    }
  }
  pending_.clear();
  recent_ = pending_.end();
  for (Mailbox& box : mailboxes_) {
    for (auto* queue : {&box.sends, &box.recvs}) {
      for (Message& message : *queue) {
        if (!message.work->done) unfinished.push_back(end_unfinished(*message.work));
      }
      queue->clear();
    }
  }
}

void SimGroup::after_timeout(const SimWork& timed_out, const std::string& why) {
  const BackendCapabilities& rules = *rules_;
  const AfterTimeout rule = rules.after_timeout;
  if (rule != AfterTimeout::GroupClosed) {
    if (rule == AfterTimeout::RanksCollectivesRefused && is_point_to_point(timed_out.op())) {
      return;  // cancelled: the group is intact
    }
    if (refused_.empty()) refused_.resize(static_cast<size_t>(size()));
    refused_[static_cast<size_t>(timed_out.group_rank)] = why;
    refusing_ = true;
    return;
  }
  if (closed_by_rank_ >= 0) return;  // closed already
  closed_by_ = why;
  closed_by_rank_ = timed_out.group_rank;
  refusing_ = true;
  // Every other member's pending op fails now, as its connection to the timed-out rank drops.
  // Ranks timing out at this same moment keep their own Timeout (their wake error is set).
  auto fails_now = [](const std::shared_ptr<SimWork>& w) {
    return w && !w->done && w->owner.wake_error == nullptr;
  };
  auto error_for = [&](const SimWork& w) {
    const BlockInfo info = w.info();
    return std::make_exception_ptr(RankFailure(ranks::detail::lost_peer_text(
        w.owner.rank, fmt::format("rank {}", global_rank(closed_by_rank_)), why,
        {info.op, name(), info.seq, info.where}, rules.after_timeout_note)));
  };
  std::vector<std::shared_ptr<SimWork>> failed;
  for (auto& [seq, pending] : pending_) {
    for (Arrival& arrival : pending.arrivals) {
      if (!fails_now(arrival.work)) continue;
      failed.push_back(std::move(arrival.work));
      arrival = Arrival{};
      --pending.arrived;
    }
    pending.first = -1;
    for (size_t r = 0; r < pending.arrivals.size(); ++r) {
      if (pending.arrivals[r].work) pending.first = static_cast<int>(r);
    }
  }
  for (Mailbox& box : mailboxes_) {
    for (auto* queue : {&box.sends, &box.recvs}) {
      for (Message& message : *queue) {
        if (fails_now(message.work)) failed.push_back(message.work);
      }
      std::erase_if(*queue, [&](const Message& m) { return fails_now(m.work); });
    }
  }
  for (const auto& work : failed) engine_.complete(*work, error_for(*work));
}

void SimGroup::check_refusal(int rank, const OpRequest& request) const {
  const BackendCapabilities& rules = *rules_;
  const ranks::detail::OpPlace place = ranks::detail::place_of(request, name());
  // What the group was left by the timeout, and what that leaves of this op.
  auto failed_earlier = [&](const std::string& why) {
    return ranks::detail::failed_earlier_text(ranks::detail::describe(place), name(),
                                              fmt::format("{} ({})", why, rules.after_timeout_note));
  };
  if (closed_by_rank_ >= 0) {
    if (rank == closed_by_rank_) throw Timeout(failed_earlier(closed_by_));
    throw RankFailure(ranks::detail::lost_peer_text(
        global_rank(rank), fmt::format("rank {}", global_rank(closed_by_rank_)), closed_by_, place,
        rules.after_timeout_note));
  }
  if (refused_.empty() || refused_[static_cast<size_t>(rank)].empty()) return;
  const std::string& why = refused_[static_cast<size_t>(rank)];
  if (rules.after_timeout == AfterTimeout::RanksGroupAborted) throw Timeout(failed_earlier(why));
  if (!is_point_to_point(request.kind)) throw BackendError(failed_earlier(why));
}

std::vector<std::string> GroupRegistry::close_all() {
  std::vector<std::string> unfinished;
  for (auto& [name, group] : groups_) group->close(unfinished);
  return unfinished;
}

std::shared_ptr<SimGroup> GroupRegistry::get(const GroupSpec& spec,
                                             const BackendCapabilities& rules) {
  auto [it, inserted] = groups_.try_emplace(spec.name);
  if (inserted) it->second = std::make_shared<SimGroup>(engine_, spec, rules);
  return it->second;
}

SimComm::SimComm(Engine& engine, GroupRegistry& registry, std::shared_ptr<SimGroup> group, int rank,
                 int global_rank)
    : group_(std::move(group)),
      engine_(engine),
      rank_(rank),
      global_rank_(global_rank),
      registry_(registry) {}

namespace {
[[noreturn, gnu::noinline]] void refuse_after_run(const SimGroup& group, const OpRequest& r) {
  throw InvalidArgument(fmt::format(
      "{} at {}: group '{}' belongs to a simulation that has ended; make groups inside the "
      "run that uses them",
      op_label(r), where_str(r.where), group.name()));
}
}  // namespace

OpRequest& SimComm::draft() {
  // After the run the engine is gone: submit() refuses the op, built where any backend builds it.
  if (group_->closed()) return Backend::draft();
  if (draft_ != nullptr) {
    draft_->request = OpRequest{};
  } else {
    draft_ = std::allocate_shared<SimWork>(PoolAllocator<SimWork>(engine_.work_pool()), engine_,
                                           engine_.rank(global_rank_), *group_, rank_);
  }
  return draft_->request;
}

Work SimComm::submit(OpRequest&& request) {
  if (group_->refusing()) {
    if (group_->closed()) refuse_after_run(*group_, request);
    group_->check_refusal(rank_, request);
  }
  // A request built elsewhere (not by draft()) moves into a work of its own.
  if (draft_ == nullptr || &request != &draft_->request) draft() = std::move(request);
  std::shared_ptr<SimWork> work = std::move(draft_);
  work->start();
  SimRank& owner = work->owner;
  describe_block_into(owner.block, work->request, work->group);  // not info(): see there
  owner.block_work = work.get();
  engine_.on_op_entered(owner, owner.block);
  Work handle(work);
  switch (work->op()) {
    case OpKind::Send:
      group_->post_send(std::move(work));
      break;
    case OpKind::Recv:
      group_->post_recv(std::move(work));
      break;
    default:
      group_->arrive(std::move(work));
      break;
  }
  return handle;
}

std::unique_ptr<Backend> SimComm::create_subgroup(const GroupSpec& spec) {
  if (spec.rank < 0) return nullptr;
  return std::make_unique<SimComm>(engine_, registry_, registry_.get(spec, group_->rules()),
                                   spec.rank, global_rank_);
}

// Simulated groups are matched by their spec alone, so the members can make one without the
// others; the store is not needed.
std::unique_ptr<Backend> SimComm::create_member_group(const GroupSpec& spec,
                                                      std::shared_ptr<Store> /*store*/) {
  return create_subgroup(spec);
}

std::unique_ptr<Backend> SimComm::create_side_group(const GroupSpec& spec,
                                                    std::string_view backend) {
  if (spec.rank < 0) return nullptr;
  return std::make_unique<SimComm>(engine_, registry_, registry_.get(spec, capabilities(backend)),
                                   spec.rank, global_rank_);
}

}  // namespace ranks::sim::detail
