#pragma once
// The launchers of a multi-node `ranks run` watch each other. Each listens on a port of its own
// (on the interface that reaches MASTER_ADDR), publishes it through the job's rendezvous store
// once rank 0 has started it, and connects to every launcher before it in node order; over
// those connections they ping each other every second, and say goodbye when they leave. A
// launcher that vanishes (killed, or its host gone) closes its connections without a goodbye:
// the others learn it at once, where their ranks would wait for their timeout. One that is
// frozen (SIGSTOP) keeps its connections but stops answering: at its failure report a launcher
// names the nodes that have been silent.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ranks::cli {

struct NodeWatchSetup {
  int nnodes = 1;
  int node_rank = 0;
  int nproc = 1;  // ranks per node: node i holds ranks i*nproc .. (i+1)*nproc-1
  std::string master_addr;
  int master_port = 0;
  std::string token;  // the job's secret ("" when it has none): peers must present it
};

class NodeWatch {
 public:
  explicit NodeWatch(NodeWatchSetup setup);  // starts watching in the background
  ~NodeWatch();                               // says goodbye to every peer
  NodeWatch(const NodeWatch&) = delete;
  NodeWatch& operator=(const NodeWatch&) = delete;

  // The first node whose launcher closed its connection without a goodbye.
  std::optional<int> vanished() const;
  // Nodes connected to that have not answered for at least `for_at_least`.
  std::vector<int> silent(std::chrono::milliseconds for_at_least) const;
  // "node 1 (ranks 2-3)".
  std::string describe(int node) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ranks::cli
