#pragma once
// Everything that belongs to one rank lives in its Context: the default group, rank facts, the
// RNG behind sync_random_seed, the clock. ranks::current() returns the process's Context in real
// runs and the running fiber's Context in the simulator. There is no other per-rank global or
// thread_local state anywhere: simulated ranks share one thread, so it would be shared by all.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>

#include "ranks/backend.hpp"
#include "ranks/store.hpp"

namespace ranks {

// Time as a rank sees it: real time in real runs, the virtual clock in the simulator.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual void sleep_for(std::chrono::nanoseconds) = 0;
  virtual std::chrono::nanoseconds now() = 0;
};

struct BackendCapabilities;
class Group;

namespace detail {

struct alignas(64) GroupImpl {
  // What every op reads or writes first, in one cache line with spec's start (see Context).
  const BackendCapabilities* capabilities = nullptr;  // what dispatch lets through
  std::unique_ptr<Backend> backend;                   // null when this rank is not a member
  uint64_t next_collective_seq = 0;
  uint64_t next_p2p_seq = 0;
  std::chrono::milliseconds timeout{0};
  // The object collective in progress on this group (Context::object_call's name), which
  // dispatch gives the ops it runs through (OpRequest::api); kept here, where dispatch looks
  // anyway, rather than read from the Context on every op.
  const char* object_api = nullptr;
  GroupSpec spec;
  std::string backend_name;
  // Payload bytes the heads of this group's next all_gather_object carry (object/exchange.cpp);
  // every member updates it in step.
  uint64_t object_head_payload = 0;
  int size() const { return spec.size(); }
};

// A new GroupImpl on a cache line of its own (detail/line_aligned.hpp says why not make_shared).
std::shared_ptr<GroupImpl> make_group_impl();

// A small, fast, seedable generator (splitmix64): a simulated rank must stay a few KiB.
class Rng {
 public:
  Rng() = default;
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  void seed(uint64_t s) { state_ = s; }

 private:
  uint64_t state_ = 0;
};

}  // namespace detail

class Context {
 public:
  // The fields every op reads or writes come first, within one cache line: a simulated run
  // keeps thousands of contexts, and each rank-operation's lines are what a large run waits on.
  bool initialized = false;
  bool started_by_main = false;  // init_process_group() inside ranks::main() adopts this one
  // A simulated rank of a script that initialises itself (`ranks sim -- python3 script.py`): not
  // distributed (initialized false, its world kept) until the script's own init_process_group or
  // init_dist, as a real process is not.
  bool awaiting_init = false;
  // Object collectives (and the small exchanges of sync_random_seed and all_reduce_dict's key
  // check) in progress on this rank: the program's own metadata, so the simulator moves their
  // bytes even in a shapes-only run, where nothing downstream would make sense without them.
  int carrying_objects = 0;
  int rank = 0;
  int world_size = 1;
  std::shared_ptr<detail::GroupImpl> world;
  Clock* clock = nullptr;  // null: the real clock
  int local_rank = 0;
  int local_size = 1;
  std::string backend_name;
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  // How many groups with each member list have been made, so that repeated new_group() calls
  // with the same members get distinct, deterministic names.
  std::map<std::string, int> group_names;
  detail::Rng rng;
  std::shared_ptr<Store> store;  // real runs: the rendezvous store the world was made with
  std::string store_host;        // who serves it, as messages name it ("rank 0"); "" unknown
  // The outermost object collective in progress: the call the program made
  // ("broadcast_object_list", its group and call site), whose name the ops it runs through take
  // in messages and reports.
  struct ObjectCall {
    const char* api = nullptr;  // a string literal; null: none
    const Group* group = nullptr;
    std::source_location where;
  } object_call;

  // Resets to the non-distributed state.
  void reset();
};

// The calling rank's context.
Context& current();

namespace detail {
// Marks the calling rank's ops as carrying objects for its lifetime (see carrying_objects).
class CarryingObjects {
 public:
  CarryingObjects() : context_(current()) { ++context_.carrying_objects; }
  ~CarryingObjects() { --context_.carrying_objects; }
  CarryingObjects(const CarryingObjects&) = delete;
  CarryingObjects& operator=(const CarryingObjects&) = delete;

 private:
  Context& context_;
};

// At an object collective's entry: the ops it runs through take its name, group and call site
// in messages and reports (object_call, GroupImpl::object_api) for its lifetime, unless an outer
// call has named them.
class ObjectCallScope {
 public:
  ObjectCallScope(const char* api, const Group& group, std::source_location where);
  ~ObjectCallScope();
  ObjectCallScope(const ObjectCallScope&) = delete;
  ObjectCallScope& operator=(const ObjectCallScope&) = delete;

 private:
  Context& context_;
  Context::ObjectCall outer_;
  GroupImpl* group_;  // null: not distributed, or not a member (the call refuses it)
  const char* outer_api_ = nullptr;
};
}  // namespace detail

namespace detail {
// The simulator points this thread's slot at the variable its scheduler updates on every fiber
// switch: the running rank's Context, or null on the main fiber. Real runs never set one.
// Returns the previous slot.
Context* const* set_context_slot(Context* const* slot);
// Whether a simulator runs its ranks on this thread (then cuda tensors are host memory).
bool simulating_on_this_thread();
}  // namespace detail

}  // namespace ranks
