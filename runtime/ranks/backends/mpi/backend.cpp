#include "ranks/backends/mpi/backend.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <numeric>

#include "ranks/backends/mpi/types.hpp"
#include "ranks/backends/mpi/work.hpp"
#include "ranks/backends/plugin.hpp"
#include "ranks/context.hpp"
#include "ranks/errors.hpp"
#include "ranks/real/frozen_peers.hpp"

namespace ranks::backends::mpi {

namespace {

// Registered with atexit only when create_world initialised MPI itself.
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized != 0) return;
  if (const Context& context = current(); context.started_by_main && context.initialized) {
    // A rank body that calls exit() ends here with ranks::main's world still up. MPI_Finalize
    // would wait for the peers, which wait in their next op for this rank: leave without it, so
    // that mpirun sees a rank exit unfinalised, with its status, and stops the job at once (a
    // plain MPI program that calls exit() gets the same).
    std::fputs(
        "ranks: the rank's body called exit() with its process group still up; exiting without "
        "MPI_Finalize, so that mpirun stops the job\n",
        stderr);
    return;
  }
  if (has_abandoned_operations()) {
    // MPI_Finalize would wait for the peers a timed-out operation waits for: exit without it
    // (mpirun then reports this process as having exited without finalising).
    std::fputs(
        "ranks: an MPI operation timed out and is still pending; exiting without "
        "MPI_Finalize\n",
        stderr);
    return;
  }
  free_types();
  MPI_Finalize();
}

void initialise_mpi() {
  static std::mutex m;
  std::lock_guard guard(m);
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized != 0) {
    throw BackendError(
        "mpi: MPI has already been finalised in this process; it cannot start again");
  }
  int provided = MPI_THREAD_SINGLE;
  if (initialized == 0) {
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread",
              "mpi");
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);  // someone else initialised MPI; we live with their level
  }
  set_thread_level(provided);
  init_types();
}

// Our own copy of a communicator, so that our traffic never meets the program's own MPI calls.
MPI_Comm duplicate(MPI_Comm comm) {
  MPI_Comm copy = MPI_COMM_NULL;
  auto lock = lock_mpi();
  check_mpi(MPI_Comm_dup(comm, &copy), "MPI_Comm_dup", "mpi");
  check_mpi(MPI_Comm_set_errhandler(copy, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "mpi");
  return copy;
}

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(std::shared_ptr<Comm> comm) : comm_(std::move(comm)) {}
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;
  ~MpiBackend() override { comm_->release_all(); }

  std::string_view name() const override { return "mpi"; }
  Work submit(OpRequest&& request) override { return start(comm_, std::move(request)); }

  std::unique_ptr<Backend> create_subgroup(const GroupSpec& spec) override {
    // Every rank of this communicator takes part; members are keyed by their group rank, which
    // orders them as the sorted member list does.
    const std::string ctx = fmt::format("mpi: new_group '{}'", spec.name);
    MPI_Comm sub = MPI_COMM_NULL;
    {
      auto lock = lock_mpi();
      check_mpi(MPI_Comm_split(comm_->handle, spec.rank >= 0 ? 0 : MPI_UNDEFINED,
                               spec.rank >= 0 ? spec.rank : 0, &sub),
                "MPI_Comm_split", ctx);
    }
    if (spec.rank < 0) return nullptr;
    return adopt(sub, spec, ctx, "MPI_Comm_split");
  }

  // MPI_Comm_create_group (MPI-3): only the members take part, as torch.distributed asks them
  // alone for a backend's group. Its tag tells apart groups that overlapping members make at the
  // same time; members make their groups in the same order, so the name's hash serves.
  std::unique_ptr<Backend> create_member_group(const GroupSpec& spec,
                                               std::shared_ptr<Store> /*store*/) override {
    const std::string ctx = fmt::format("mpi: group '{}' of its members", spec.name);
    const int tag = static_cast<int>(std::hash<std::string>{}(spec.name) % 32768);  // <= TAG_UB
    MPI_Group parent = MPI_GROUP_NULL;
    MPI_Group members = MPI_GROUP_NULL;
    MPI_Comm sub = MPI_COMM_NULL;
    {
      auto lock = lock_mpi();
      check_mpi(MPI_Comm_group(comm_->handle, &parent), "MPI_Comm_group", ctx);
      // This communicator is the world: its ranks are the global ones the spec lists.
      const int result = MPI_Group_incl(parent, spec.size(), spec.global_ranks().data(), &members);
      MPI_Group_free(&parent);
      check_mpi(result, "MPI_Group_incl", ctx);
      const int created = MPI_Comm_create_group(comm_->handle, members, tag, &sub);
      MPI_Group_free(&members);
      check_mpi(created, "MPI_Comm_create_group", ctx);
    }
    return adopt(sub, spec, ctx, "MPI_Comm_create_group");
  }

 private:
  // A new communicator of a group's members, checked to give this process the spec's place.
  std::unique_ptr<Backend> adopt(MPI_Comm sub, const GroupSpec& spec, const std::string& ctx,
                                 const char* made_by) {
    int rank = -1;
    int size = 0;
    {
      auto lock = lock_mpi();
      check_mpi(MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", ctx);
      MPI_Comm_rank(sub, &rank);
      MPI_Comm_size(sub, &size);
    }
    auto comm = std::make_shared<Comm>(sub, spec.name, spec.members, spec.rank);
    comm->default_timeout = comm_->default_timeout;
    if (rank != spec.rank || size != spec.size()) {
      throw BackendError(fmt::format("{}: {} made rank {} of {}, expected rank {} of {}", ctx,
                                     made_by, rank, size, spec.rank, spec.size()));
    }
    return std::make_unique<MpiBackend>(std::move(comm));
  }

  std::shared_ptr<Comm> comm_;
};

// Every rank's process (host, pid), so that a rank whose op times out can tell a frozen peer on
// its host (real/frozen_peers.hpp): MPI has no store to publish it in. Gathered over the world's
// own duplicate, before any op, so no op's sequence number moves.
void gather_processes(MPI_Comm comm, int size) {
  struct Entry {
    int pid;
    char host[252];
  };
  const ranks::detail::RankProcess me = ranks::detail::this_process();
  Entry mine{me.pid, {}};
  std::strncpy(mine.host, me.host.c_str(), sizeof mine.host - 1);
  std::vector<Entry> all(static_cast<size_t>(size));
  const int bytes = static_cast<int>(sizeof mine);
  check_mpi(MPI_Allgather(&mine, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, comm),
            "MPI_Allgather", "mpi");
  std::vector<ranks::detail::RankProcess> processes;
  processes.reserve(all.size());
  for (const Entry& e : all) {
    processes.push_back({std::string(e.host, ::strnlen(e.host, sizeof e.host)), e.pid});
  }
  ranks::detail::set_rank_processes(std::move(processes));
}

}  // namespace

std::unique_ptr<Backend> create_world(const WorldSetup& setup) {
  initialise_mpi();
  int rank = -1;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != setup.rank || size != setup.world_size) {
    throw RendezvousError(fmt::format(
        "mpi: the launcher says rank {} of {} but MPI_COMM_WORLD has this process as rank {} of "
        "{}; start every rank under one mpirun (or srun) with -np {}, or pick another backend",
        setup.rank, setup.world_size, rank, size, setup.world_size));
  }
  auto members = std::make_shared<std::vector<int>>(static_cast<size_t>(size));
  std::iota(members->begin(), members->end(), 0);
  auto comm = std::make_shared<Comm>(duplicate(MPI_COMM_WORLD), "world", std::move(members), rank);
  if (!setup.group) gather_processes(comm->handle, size);
  comm->default_timeout = setup.timeout;
  auto world = std::make_unique<MpiBackend>(std::move(comm));
  // A side group: split from the world, in which every rank takes part.
  if (setup.group) return world->create_subgroup(*setup.group);
  return world;
}

}  // namespace ranks::backends::mpi

RANKS_BACKEND_PLUGIN(mpi)
