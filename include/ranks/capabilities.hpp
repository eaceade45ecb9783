#pragma once
// What each backend supports, as data: op x device type, plus the reduce ops and dtypes it
// accepts. The simulator enforces the table of the backend it emulates and the real backends
// enforce their own, through the same check in dispatch, so a program that passes
// `ranks sim --backend B` does not hit an unsupported op on real B.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/device.hpp"
#include "ranks/dtype.hpp"
#include "ranks/op.hpp"
#include "ranks/reduce_op.hpp"

namespace ranks {

enum class Support {
  No,
  Yes,
  Staged,  // works through a copy to the backend's device and back (MMEngine's device rule)
};

struct OpSupport {
  OpKind op;
  Support cpu;
  Support cuda;
  Support torch_cpu;   // what torch.distributed documents for the same backend
  Support torch_cuda;  // (where ranks does better or differs, the note says why)
  std::string_view note;
};

// What a timed-out op leaves of its group, on the real backend and so in the simulator.
enum class AfterTimeout {
  GroupClosed,              // gloo: the group is closed for every member (peers see their
                            // connections to the rank drop)
  RanksGroupAborted,        // nccl: the rank's communicator is aborted (its later ops on the
                            // group fail); peers learn nothing and time out on their own
  RanksCollectivesRefused,  // Open MPI: a send or receive is cancelled; a collective cannot be,
                            // so the rank's communicator takes no further collectives
};

struct BackendCapabilities {
  BackendCapabilities(std::string_view backend, std::span<const OpSupport> ops,
                      std::span<const ReduceOp> reduce_ops, std::string_view sources,
                      bool recv_any_source = true, bool matches_tags = true,
                      bool one_gpu_per_rank = false);

  std::string_view backend;
  std::span<const OpSupport> ops;
  std::span<const ReduceOp> reduce_ops;  // supported reduce ops (any dtype that has them)
  std::string_view sources;              // where the torch columns come from
  // Whether recv(t, any_source) exists; NCCL matches a receive to one named sender only.
  bool recv_any_source = true;
  // Whether tags select messages; NCCL ignores them and pairs two ranks' sends and receives in
  // the order they were posted.
  bool matches_tags = true;
  // Whether a rank's cuda tensors must be on its own GPU, cuda:<local rank>: an NCCL
  // communicator is bound to one device, and NCCL refuses two ranks on one.
  bool one_gpu_per_rank = false;
  AfterTimeout after_timeout = AfterTimeout::GroupClosed;
  // What failure texts say of the group after a timeout, and what to do about it.
  std::string_view after_timeout_note = "gloo closes a group at its first failure; make a new "
                                        "group to go on";
  // Whether the ranks waiting on a peer that died learn it at once (a RankFailure: gloo's
  // connections drop, Open MPI's runtime ends the job), or only when their own op times out
  // (NCCL sees no dead peer: its watchdog's Timeout is what the survivors get).
  bool dead_peer_noticed_at_once = true;
  // Whether the ranks find each other through the rendezvous store (MASTER_ADDR/MASTER_PORT);
  // Open MPI's ranks are connected by its own runtime, so they need no store.
  bool rendezvous_through_store = true;
  // The largest message (bytes of payload) a send completes with no matching receive posted,
  // because the library holds it (Open MPI's eager protocol), between ranks of one node and of
  // two nodes; 0 where a send always waits for its receive (gloo, NCCL). A program that needs it
  // (two ranks sending to each other first) passes at small sizes and hangs above the limit.
  // Measured with scenarios/bugs/head_to_head_send (reports/buffering.md).
  int64_t eager_send_bytes_within_node = 0;
  int64_t eager_send_bytes_across_nodes = 0;
  int64_t eager_send_bytes(bool same_node) const {
    return same_node ? eager_send_bytes_within_node : eager_send_bytes_across_nodes;
  }
  // How the backend's ranks are started, as MMEngine names launchers: "pytorch" (one process per
  // rank, torchrun's variables: what `ranks run` does) or "mpi" (mpirun starts and connects them:
  // `ranks run` starts mpirun). A simulated rank's infer_launcher() answers it.
  std::string_view launcher = "pytorch";
  // The cost-model preset of the hardware the backend usually runs on (`ranks bench --sim`
  // without --model).
  std::string_view usual_hardware = "h100-nvlink-ib";

  const OpSupport* find(OpKind op) const {
    const int8_t row = row_of_[static_cast<size_t>(op)];
    return row < 0 ? nullptr : &ops[static_cast<size_t>(row)];
  }
  // Empty when op/device/dtype/reduce op is supported; otherwise why not, with what to do.
  std::optional<std::string> why_unsupported(const OpRequest& request) const;
  // The same verdict without the message: what dispatch asks on every op (why_unsupported is
  // asked only when this says no).
  bool allows(const OpRequest& request) const;
  std::string to_markdown() const;

 private:
  static uint32_t reduce_op_bit(ReduceOp op) {
    const auto index = static_cast<unsigned>(op);
    return index < 32 ? 1u << index : 0;  // a value outside the enum is in no set
  }

  // Each op's row in `ops`, or -1, and reduce_ops as a set: dispatch asks both on every call.
  std::array<int8_t, op_kind_count> row_of_;
  uint32_t reduce_op_bits_ = 0;
};

// The table of "nccl", "gloo" or "mpi"; InvalidArgument for any other name.
const BackendCapabilities& capabilities(std::string_view backend);
std::span<const std::string_view> backend_names();  // {"nccl", "gloo", "mpi"}

// MMEngine's get_comm_device(): the device a backend communicates from: cuda:<local rank> for
// nccl, cpu otherwise (and when not distributed). Programs that run on every backend allocate
// their communication buffers there.
Device comm_device();

}  // namespace ranks
