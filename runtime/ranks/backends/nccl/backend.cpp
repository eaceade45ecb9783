#include "ranks/backends/nccl/backend.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "ranks/backends/join.hpp"
#include "ranks/backends/nccl/types.hpp"
#include "ranks/backends/nccl/watchdog.hpp"
#include "ranks/backends/nccl/work.hpp"
#include "ranks/backends/plugin.hpp"
#include "ranks/detail/cuda.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/detail/memory.hpp"
#include "ranks/errors.hpp"
#include "ranks/store/stores.hpp"

namespace ranks::backends::nccl {

namespace detail {
namespace {

constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(30);

// Non-blocking: NCCL calls return at once and are polled against our deadlines (backend.hpp).
ncclConfig_t make_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

std::vector<uint8_t> bytes_of(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  return {b, b + n};
}

// The world communicator: rank 0's unique id through the store, then ncclCommInitRankConfig.
ncclComm_t init_world(const std::shared_ptr<ranks::Store>& root_store, const GroupSpec& spec,
                      int device, std::chrono::milliseconds timeout) {
  const std::string who = fmt::format(
      "nccl: creating the world communicator (rank {} of {} on "
      "cuda:{})",
      spec.rank, spec.size(), device);
  PrefixStore store("nccl/" + spec.name, root_store);
  join_members(store, spec, timeout, who);
  ncclUniqueId id{};
  if (spec.rank == 0) {
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", who);
    store.set("unique_id", bytes_of(&id, sizeof(id)));
  } else {
    try {
      store.wait({"unique_id"}, timeout);
    } catch (const Error& e) {
      throw RendezvousError(
          fmt::format("{}: rank 0 did not publish NCCL's unique id within {} ({})", who,
                      ranks::detail::format_duration(timeout), e.what()));
    }
    std::vector<uint8_t> value = store.get("unique_id");
    if (value.size() != sizeof(id)) {
      throw RendezvousError(fmt::format("{}: the unique id from rank 0 has {} bytes, not {}", who,
                                        value.size(), sizeof(id)));
    }
    std::memcpy(&id, value.data(), sizeof(id));
  }
  ncclConfig_t config = make_config();
  ncclComm_t comm = nullptr;
  try {
    check_nccl(ncclCommInitRankConfig(&comm, spec.size(), id, spec.rank, &config),
               "ncclCommInitRankConfig", who, comm);
    settle(comm, Clock::now() + timeout, who, {});
  } catch (...) {
    if (comm != nullptr) ncclCommAbort(comm);
    throw;
  }
  return comm;
}

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)) {}

  std::string_view name() const override { return "nccl"; }
  Work submit(OpRequest&& request) override { return start(comm_, std::move(request)); }

  // ncclCommSplit from this communicator: every rank of it takes part (non-members with
  // NCCL_SPLIT_NOCOLOR); members are keyed by their group rank, so NCCL's ranks are ours.
  std::unique_ptr<Backend> create_subgroup(const GroupSpec& spec) override {
    const std::string who =
        fmt::format("nccl: new_group '{}' (split from group '{}', rank {} of {})", spec.name,
                    comm_->spec().name, comm_->spec().rank, comm_->spec().size());
    DeviceGuard guard(comm_->device(), who);
    ncclComm_t sub = nullptr;
    const auto deadline = Clock::now() + comm_->default_timeout();
    try {
      comm_->launch([&](ncclComm_t parent) {
        ncclConfig_t config = make_config();
        check_nccl(ncclCommSplit(parent, spec.rank >= 0 ? 0 : NCCL_SPLIT_NOCOLOR,
                                 std::max(spec.rank, 0), &sub, &config),
                   "ncclCommSplit", who, parent);
        settle(parent, deadline, who, {});
        if (sub != nullptr) settle(sub, deadline, who, {});
      });
    } catch (const Error&) {
      // A split that failed or timed out may have left NCCL inside the parent's collective
      // machinery: the parent group is not safe to use any more.
      if (sub != nullptr) ncclCommAbort(sub);
      comm_->fail(std::current_exception());
      throw;
    }
    if (spec.rank < 0) return nullptr;
    int rank = -1;
    int size = 0;
    check_nccl(ncclCommUserRank(sub, &rank), "ncclCommUserRank", who, sub);
    check_nccl(ncclCommCount(sub, &size), "ncclCommCount", who, sub);
    auto comm =
        std::make_shared<Communicator>(spec, comm_->device(), sub, comm_->default_timeout());
    if (rank != spec.rank || size != spec.size()) {
      throw BackendError(fmt::format("{}: ncclCommSplit made rank {} of {}, expected rank {} of {}",
                                     who, rank, size, spec.rank, spec.size()));
    }
    return std::make_unique<NcclBackend>(std::move(comm));
  }

 private:
  const std::shared_ptr<Communicator> comm_;
};

}  // namespace
}  // namespace detail

std::unique_ptr<Backend> create_world(const WorldSetup& setup) {
  GroupSpec spec = world_spec("nccl", setup, "to exchange NCCL's unique id");
  if (spec.rank < 0) return nullptr;  // a side group this rank is not in
  const std::string who = fmt::format("nccl backend: rank {} of {} (local rank {})", setup.rank,
                                      setup.world_size, setup.local_rank);
  if (ranks::detail::cuda_is_host_memory()) {
    throw InvalidArgument(fmt::format(
        "{}: RANKS_CUDA_MEMORY=host makes cuda tensors host memory, which NCCL cannot move; "
        "unset it, or use the gloo backend",
        who));
  }
  // Read now, so that a bad value is an error here rather than in the watchdog thread.
  (void)detail::exit_on_timeout();
  // Unsupported "... no CUDA device ..." on a machine without one; InvalidArgument when the
  // local rank has no device of its own (NCCL refuses two ranks on one GPU).
  ranks::detail::require_cuda_device(
      setup.local_rank, who,
      "nccl needs one GPU per rank: run on GPU nodes, use the gloo backend (`ranks run "
      "--backend gloo`, RANKS_BACKEND=gloo), or simulate the program with `ranks sim "
      "--backend nccl`");
  const int device = setup.local_rank;
  // The device stays bound to this process's main thread: the program's own kernels and
  // cudaMalloc go to the rank's GPU, as torch.cuda.set_device(LOCAL_RANK) would do.
  detail::check_cuda(cudaSetDevice(device), "cudaSetDevice", who);
  const auto timeout = setup.timeout.count() > 0 ? setup.timeout : detail::kDefaultTimeout;
  ncclComm_t comm = detail::init_world(setup.store, spec, device, timeout);
  return std::make_unique<detail::NcclBackend>(
      std::make_shared<detail::Communicator>(std::move(spec), device, comm, timeout));
}

}  // namespace ranks::backends::nccl

RANKS_BACKEND_PLUGIN(nccl)
