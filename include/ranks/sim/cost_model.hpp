#pragma once
// The simulator's cost model: how long a collective or a message takes on the virtual clock.
// Contention-free alpha-beta (Hockney) per link class, as LogGOPSim and ASTRA-sim's analytical
// backend do: a step costs alpha + bytes / beta, an algorithm is a number of steps and a
// fraction of the buffer that crosses the bottleneck link. Calibrated models may replace the
// link's figures per op and size range (SMPI's piece-wise model; NCCL's protocols), each range
// with the algorithm the measured library was seen to use.

#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/op.hpp"

namespace ranks::sim {

inline constexpr double unlimited = std::numeric_limits<double>::infinity();

enum class LinkClass { Intra, Inter };        // within a node, between nodes
std::string_view link_class_name(LinkClass);  // "intra", "inter"

enum class Algorithm { Auto, Ring, Tree, Direct };
std::string_view algorithm_name(Algorithm);        // "auto", "ring", "tree", "direct"
Algorithm parse_algorithm(std::string_view name);  // InvalidArgument for unknown names

// One link class: a message of b bytes takes alpha_s + b / beta_Bps seconds.
struct Link {
  double alpha_s = 0;
  double beta_Bps = unlimited;
};

// A calibrated size range of one op: sizes up to up_to_bytes (inclusive) cost
// overhead_s + steps * alpha_s + factor * bytes / beta_Bps with the algorithm's steps and factor.
struct Segment {
  double up_to_bytes = unlimited;
  Algorithm algorithm = Algorithm::Auto;
  double overhead_s = 0;  // per call (LogGP's o): software cost that does not grow with n
  double alpha_s = 0;
  double beta_Bps = unlimited;
};

struct OpModel {
  Algorithm algorithm = Algorithm::Auto;  // when no segment applies
  std::vector<Segment> intra;             // empty: the intra link with `algorithm`
  std::vector<Segment> inter;
  // Fits for one measured world size, which win over the ranges above at that size: where
  // ranks share cores (4 processes on 2 here) time does not scale with n as any network
  // algorithm says, so the all-sizes fit is kept for world sizes nobody measured.
  std::map<int, std::vector<Segment>> intra_at;
  std::map<int, std::vector<Segment>> inter_at;

  const std::vector<Segment>& segments(LinkClass link, int n) const;
};

struct CostModel {
  std::string name = "free";  // "free": every op costs nothing (the default)
  std::string description;
  std::string backend;               // calibrated models: the backend that was measured
  std::vector<std::string> sources;  // where the figures come from
  Link intra{0, unlimited};
  Link inter{0, unlimited};
  // Links between nodes that one collective can use at once: a node with a NIC per GPU (rails)
  // runs a channel per rail, so a step of a group with k members on each node it spans moves
  // over min(k, inter_rails) links, up to the intra link's bandwidth. A message, all_to_all's
  // traffic, gather and scatter leave through their sender's one link. Model files:
  // links.inter.rails (default 1).
  int inter_rails = 1;
  std::map<std::string, OpModel, std::less<>> ops;  // by op family (op_family below)

  bool is_free() const;
  // Whether anything in the model prices links between nodes (a model calibrated on one
  // machine has no such figures).
  bool prices_inter_node() const;
};

// The op families a model prices: all_reduce, all_gather, reduce_scatter, broadcast, reduce,
// all_to_all, gather, scatter, barrier, sendrecv (send and recv). Empty for new_group (free).
std::string_view op_family(OpKind);
std::span<const std::string_view> op_families();

// An algorithm's shape for n ranks: time = steps * alpha + factor * bytes / beta, where bytes is
// the op's size as nccl-tests counts it (see docs/design.md, "Cost model and bench").
struct Terms {
  double steps = 0;
  double factor = 0;
};
// The algorithms an op family can use (Auto excluded); the first is the default.
std::span<const Algorithm> algorithms_for(std::string_view family);
// InvalidArgument when the family does not have the algorithm.
Terms terms(std::string_view family, Algorithm, int n);

struct Prediction {
  double seconds = 0;
  Algorithm algorithm = Algorithm::Auto;
};
// The cost of one op of `family` with `bytes` (nccl-tests' size) on n ranks over link class
// `link`. Auto picks the cheapest algorithm, which is how NCCL's tuner chooses (it computes a
// predicted time per algorithm and protocol and takes the smallest). `members_per_node`: the
// group's members on its least populated node, which bounds the rails a step can use between
// nodes (see inter_rails).
Prediction predict(const CostModel&, std::string_view family, int n, double bytes, LinkClass link,
                   int members_per_node = 1);
// The members on the least populated node of n consecutive ranks, ranks_per_node to a node.
int fewest_members_per_node(int n, int ranks_per_node);

// A preset name ("free", "h100-nvlink-ib", "pcie-gen5-ib", "ethernet-40g") or the path of a
// model file (JSON, the format in docs/design.md). InvalidArgument if neither.
CostModel load_cost_model(const std::string& preset_or_path);
CostModel cost_model_preset(std::string_view name);  // InvalidArgument for unknown names
std::span<const std::string_view> cost_model_presets();
CostModel parse_cost_model(const std::string& json_text, const std::string& origin);
std::string to_json(const CostModel&);

}  // namespace ranks::sim
