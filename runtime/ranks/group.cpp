#include "ranks/group.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ranks/capabilities.hpp"
#include "ranks/detail/dispatch.hpp"
#include "ranks/errors.hpp"

namespace ranks {

namespace {
// The group a handle stands for, or null when not distributed.
const detail::GroupImpl* effective(const std::shared_ptr<detail::GroupImpl>& impl) {
  if (impl) return impl.get();
  const Context& context = current();
  return context.initialized ? context.world.get() : nullptr;
}

uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return hash;
}
}  // namespace

bool Group::is_member() const {
  const auto* g = effective(impl_);
  return g == nullptr || g->spec.rank >= 0;
}

int Group::rank() const {
  const auto* g = effective(impl_);
  return g ? g->spec.rank : 0;
}

int Group::size() const {
  const auto* g = effective(impl_);
  return g ? g->size() : 1;
}

std::string Group::backend() const {
  const auto* g = effective(impl_);
  return g ? g->backend_name : std::string{};
}

std::vector<int> Group::global_ranks() const {
  const auto* g = effective(impl_);
  return g ? g->spec.global_ranks() : std::vector<int>{0};
}

std::string Group::name() const {
  const auto* g = effective(impl_);
  return g ? g->spec.name : std::string{"world"};
}

std::chrono::milliseconds Group::timeout() const {
  const auto* g = effective(impl_);
  return g ? g->timeout : current().timeout;
}

void Group::set_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw InvalidArgument(
        fmt::format("group '{}': timeout must be positive, got {} ms", name(), timeout.count()));
  }
  if (impl_) {
    impl_->timeout = timeout;
  } else if (current().initialized) {
    current().world->timeout = timeout;
  }
}

namespace {
// new_group() on the world's backend (`backend` empty) or on another.
Group make_group(std::vector<int> global_ranks, std::string_view backend,
                 std::source_location where) {
  Context& context = current();
  detail::Call call{OpKind::NewGroup, context.world.get(), where};
  std::sort(global_ranks.begin(), global_ranks.end());
  const auto& names = backend_names();
  if (!backend.empty() && std::find(names.begin(), names.end(), backend) == names.end()) {
    throw InvalidArgument(fmt::format("new_group at {}: backend '{}' is not one of {}",
                                      detail::where_str(where), backend, fmt::join(names, ", ")));
  }
  if (!context.initialized) {
    // Not distributed: the one process is rank 0 of a world of 1, and a group of it is that
    // world (the default group: its ops are the no-ops of the non-distributed fallbacks).
    if (global_ranks != std::vector<int>{0}) {
      throw InvalidArgument(fmt::format(
          "new_group at {}: not distributed, the only rank is 0, so the only group is [0], not "
          "[{}]",
          detail::where_str(where), fmt::join(global_ranks, ", ")));
    }
    return Group();
  }
  if (backend == context.world->backend_name) backend = {};
  if (global_ranks.empty()) detail::fail(call, "the member list is empty");
  if (std::adjacent_find(global_ranks.begin(), global_ranks.end()) != global_ranks.end()) {
    detail::fail(call,
                 fmt::format("the member list [{}] repeats a rank", fmt::join(global_ranks, ", ")));
  }
  if (global_ranks.front() < 0 || global_ranks.back() >= context.world_size) {
    detail::fail(call, fmt::format("the member list [{}] has ranks outside [0, {})",
                                   fmt::join(global_ranks, ", "), context.world_size));
  }

  std::string base = fmt::format("{}/{}", context.world->spec.name, fmt::join(global_ranks, ","));
  int occurrence = ++context.group_names[base];
  std::string name = occurrence == 1 ? base : fmt::format("{}#{}", base, occurrence);

  // Every rank of the world takes part, so a rank that skips new_group() or passes other members
  // (or another backend) is caught here rather than hanging in the new group's first collective.
  OpRequest agree;
  agree.kind = OpKind::NewGroup;
  agree.extra = fnv1a(backend.empty() ? name : fmt::format("{} on {}", name, backend));
  agree.blocking = true;
  detail::dispatch(*context.world, std::move(agree), where).wait();

  auto impl = detail::make_group_impl();
  auto self = std::find(global_ranks.begin(), global_ranks.end(), context.rank);
  impl->spec = GroupSpec{
      std::make_shared<const std::vector<int>>(global_ranks),
      self == global_ranks.end() ? -1 : static_cast<int>(self - global_ranks.begin()), name};
  impl->timeout = context.world->timeout;
  if (backend.empty()) {
    impl->backend_name = context.world->backend_name;
    impl->capabilities = context.world->capabilities;
    impl->backend = context.world->backend->create_subgroup(impl->spec);
  } else {
    impl->backend_name = backend;
    impl->capabilities = &capabilities(backend);
    impl->backend = context.world->backend->create_side_group(impl->spec, backend);
  }
  return Group(std::move(impl));
}
}  // namespace

Group new_group(std::vector<int> global_ranks, std::source_location where) {
  return make_group(std::move(global_ranks), {}, where);
}

Group new_group_of_members(std::vector<int> global_ranks, std::string name,
                           std::shared_ptr<Store> store, std::source_location where) {
  Context& context = current();
  detail::Call call{OpKind::NewGroup, context.world.get(), where};
  if (!context.initialized) {
    throw InvalidArgument(fmt::format("new_group_of_members at {}: not distributed",
                                      detail::where_str(where)));
  }
  std::sort(global_ranks.begin(), global_ranks.end());
  if (global_ranks.empty()) detail::fail(call, "the member list is empty");
  if (std::adjacent_find(global_ranks.begin(), global_ranks.end()) != global_ranks.end() ||
      global_ranks.front() < 0 || global_ranks.back() >= context.world_size) {
    detail::fail(call, fmt::format("the member list [{}] repeats a rank or has ranks outside "
                                   "[0, {})",
                                   fmt::join(global_ranks, ", "), context.world_size));
  }
  auto self = std::find(global_ranks.begin(), global_ranks.end(), context.rank);
  if (self == global_ranks.end()) {
    detail::fail(call, fmt::format("rank {} is not one of the members [{}]; only members make "
                                   "such a group",
                                   context.rank, fmt::join(global_ranks, ", ")));
  }
  auto impl = detail::make_group_impl();
  const int group_rank = static_cast<int>(self - global_ranks.begin());
  impl->spec = GroupSpec{std::make_shared<const std::vector<int>>(std::move(global_ranks)),
                         group_rank, fmt::format("{}/{}", context.world->spec.name, name)};
  impl->timeout = context.world->timeout;
  impl->backend_name = context.world->backend_name;
  impl->capabilities = context.world->capabilities;
  impl->backend = context.world->backend->create_member_group(impl->spec, std::move(store));
  return Group(std::move(impl));
}

Group new_group(std::vector<int> global_ranks, std::string_view backend,
                std::source_location where) {
  return make_group(std::move(global_ranks), backend, where);
}

}  // namespace ranks
