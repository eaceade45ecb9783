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
#include <optional>
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

// A system NCCL runs on, as NCCL's tuner sees it (NVIDIA/nccl src/graph/tuning.cc and search.cc,
// v2.30): with one, a model prices the collectives NCCL has as NCCL prices them. Each algorithm
// NCCL has for the op (ring, pipelined double binary tree, NVLS and NVLS tree on NVSwitch systems
// with NVLink SHARP, PAT) and protocol (LL, LL128, Simple) gets NCCL's latency (a base, and a
// latency per hop by link class) and bandwidth (channels x per-channel speed, with each
// protocol's caps), and the cheapest is taken, as NCCL's tuner does. The time is then what
// nccl-tests measures, which the tuner leaves out: its latencies scaled, one chunk's transfer
// per sequential step, a launch overhead (the five fitted figures below, fitted to published
// measurements; reports/cost_model.md). all_to_all, gather and scatter, which NCCL runs as
// point-to-point sends, move at NVLink's rate within a node and each GPU's share of its node's
// NICs between nodes. Model files: the "nccl" object, keys as below.
struct NcclSystem {
  std::string arch = "hopper";  // "hopper" (sm90) or "ampere" (sm80): the tuner's rows
  std::string cpu = "intel";    // "intel" or "amd": network overhead and LL caps between nodes
  int gpus_per_node = 8;
  int nvlink_links = 18;           // per GPU
  double nvlink_link_GBps = 20.6;  // per link, as NCCL counts it (SM90_NVLINK_BW)
  bool nvswitch = true;
  bool nvls = true;  // NVLink SHARP (Hopper and later, on NVSwitch)
  int nics_per_node = 8;
  double nic_Gbps = 400;          // per NIC; NCCL counts Gb/s / 8 as GB/s
  double latency_inter_us = 0;    // the graph's latencyInter: 0 on InfiniBand
  double nvls_chunk_KiB = 128;    // NCCL_NVLS_CHUNKSIZE
  // Fitted (reports/cost_model/check.py --fit): nccl-tests' time beyond the tuner's.
  double launch_us = 0;
  double latency_scale = 1.15;
  double fill_chunk_KiB = 40;  // chunk serialized per step and channel (ring, tree, PAT)
  double p2p_nvlink_efficiency = 0.90;
  double p2p_net_efficiency = 0.94;
};

// One (algorithm, protocol) NCCL would consider for a call, as its tuner tables it: time_us =
// latency_us + bytes / (1000 * bandwidth_GBps), with NCCL's corrections for the size.
struct NcclCost {
  std::string_view algorithm;  // "ring", "tree", "nvls", "nvls_tree", "pat"
  std::string_view protocol;   // "LL", "LL128", "Simple"
  double latency_us = 0;
  double bandwidth_GBps = 0;  // algorithm bandwidth
  int channels = 0;
  double time_us = 0;  // NCCL's own estimate for the call's size (what it chooses by)
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
  // The collectives NCCL has are priced by its tuner's rules (NcclSystem) rather than by the
  // links; messages and barriers keep the links. Empty: links (and ops) only.
  std::optional<NcclSystem> nccl;

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
  // Priced by an NcclSystem: NCCL's algorithm ("ring", "tree", "nvls", "nvls_tree", "pat",
  // "p2p") and protocol ("LL", "LL128", "Simple"), as NCCL_DEBUG=INFO's tuning lines name them.
  std::string_view nccl_algorithm;
  std::string_view protocol;
};
// The cost of one op of `family` with `bytes` (nccl-tests' size) on n ranks over link class
// `link`. Auto picks the cheapest algorithm, which is how NCCL's tuner chooses (it computes a
// predicted time per algorithm and protocol and takes the smallest). `members_per_node`: the
// group's members on its least populated node, which bounds the rails a step can use between
// nodes (see inter_rails).
// `nodes`: the nodes the group spans (an NcclSystem prices n / nodes ranks per node).
Prediction predict(const CostModel&, std::string_view family, int n, double bytes, LinkClass link,
                   int members_per_node = 1, int nodes = 1);
// The families an NcclSystem prices: the collectives NCCL has (all_reduce, all_gather,
// reduce_scatter, broadcast, reduce) and those it runs as point-to-point sends (all_to_all,
// gather, scatter).
bool nccl_prices(std::string_view family);
// NCCL's table for one call of a collective family NCCL has (not the point-to-point ones):
// every enabled (algorithm, protocol), cheapest first, with NCCL's constants as they are.
// InvalidArgument for a family NCCL has no tuner entry for, or a layout the system cannot hold.
std::vector<NcclCost> nccl_costs(const NcclSystem&, std::string_view family, int n, int nodes,
                                 double bytes);
// One call of a family NCCL prices (nccl_prices) on n ranks over `nodes` nodes: NCCL's choice,
// priced as nccl-tests measures it (NcclSystem's fitted figures added).
Prediction nccl_predict(const NcclSystem&, std::string_view family, int n, int nodes,
                        double bytes);
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
