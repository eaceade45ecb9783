#include "ranks/sim/cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "ranks/errors.hpp"

namespace ranks::sim {

namespace {

constexpr std::array<std::string_view, 10> families = {
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
    "all_to_all", "gather",     "scatter",        "barrier",   "sendrecv"};

constexpr std::array ring_tree = {Algorithm::Ring, Algorithm::Tree};
constexpr std::array tree_ring = {Algorithm::Tree, Algorithm::Ring};
constexpr std::array tree_direct = {Algorithm::Tree, Algorithm::Direct};
constexpr std::array direct_only = {Algorithm::Direct};
constexpr std::array tree_only = {Algorithm::Tree};

double log2_steps(int n) { return std::ceil(std::log2(static_cast<double>(n))); }

double link_time(const Terms& t, double alpha, double beta, double bytes) {
  return t.steps * alpha + (std::isinf(beta) ? 0.0 : t.factor * bytes / beta);
}

}  // namespace

std::string_view link_class_name(LinkClass link) {
  return link == LinkClass::Intra ? "intra" : "inter";
}

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Auto:
      return "auto";
    case Algorithm::Ring:
      return "ring";
    case Algorithm::Tree:
      return "tree";
    case Algorithm::Direct:
      return "direct";
  }
  return "auto";
}

Algorithm parse_algorithm(std::string_view name) {
  for (Algorithm a : {Algorithm::Auto, Algorithm::Ring, Algorithm::Tree, Algorithm::Direct}) {
    if (algorithm_name(a) == name) return a;
  }
  throw InvalidArgument(
      fmt::format("cost model: algorithm '{}' is not one of auto, ring, tree, direct", name));
}

bool CostModel::is_free() const {
  auto free_link = [](const Link& l) { return l.alpha_s == 0 && std::isinf(l.beta_Bps); };
  return free_link(intra) && free_link(inter) && ops.empty() && !nccl;
}

bool CostModel::prices_inter_node() const {
  if (nccl || inter.alpha_s != 0 || !std::isinf(inter.beta_Bps)) return true;
  for (const auto& [family, op] : ops) {
    if (!op.inter.empty() || !op.inter_at.empty()) return true;
  }
  return false;
}

const std::vector<Segment>& OpModel::segments(LinkClass link, int n) const {
  const auto& at = link == LinkClass::Intra ? intra_at : inter_at;
  if (auto it = at.find(n); it != at.end() && !it->second.empty()) return it->second;
  return link == LinkClass::Intra ? intra : inter;
}

std::string_view op_family(OpKind kind) {
  switch (kind) {
    case OpKind::Send:
    case OpKind::Recv:
      return "sendrecv";
    case OpKind::NewGroup:
      return "";
    default:
      return op_name(kind);
  }
}

std::span<const std::string_view> op_families() { return families; }

std::span<const Algorithm> algorithms_for(std::string_view family) {
  if (family == "all_reduce" || family == "all_gather" || family == "reduce_scatter") {
    return ring_tree;
  }
  if (family == "broadcast" || family == "reduce") return tree_ring;
  if (family == "gather" || family == "scatter") return tree_direct;
  if (family == "barrier") return tree_only;
  if (family == "all_to_all" || family == "sendrecv") return direct_only;
  throw InvalidArgument(fmt::format("cost model: no op family '{}'", family));
}

// Steps and the fraction of `bytes` each rank sends over its bottleneck link (Thakur, Rabenseifner
// and Gropp, "Optimization of collective communication operations in MPICH", 2005; NCCL's ring):
//   ring all_reduce: reduce-scatter then all-gather, 2(n-1) steps of bytes/n
//   ring all_gather / reduce_scatter (bytes = the whole gathered array): n-1 steps of bytes/n
//   tree all_reduce (recursive doubling): log2 n steps of the whole buffer
//   tree all_gather / reduce_scatter (recursive doubling / halving): log2 n steps, (n-1)/n moved
//   tree broadcast / reduce (binomial): log2 n steps of the whole buffer
//   ring broadcast / reduce (pipelined chain): n-1 small steps, the buffer crosses each link once
//   tree gather / scatter (binomial): log2 n steps, (n-1)/n of the array leaves the root
//   direct gather / scatter / all_to_all (linear, pairwise): n-1 steps of bytes/n
//   barrier (dissemination): log2 n steps of nothing; sendrecv: one step of the whole message
Terms terms(std::string_view family, Algorithm algorithm, int n) {
  const auto algos = algorithms_for(family);
  if (algorithm == Algorithm::Auto) algorithm = algos.front();
  if (std::find(algos.begin(), algos.end(), algorithm) == algos.end()) {
    throw InvalidArgument(
        fmt::format("cost model: {} has no {} algorithm", family, algorithm_name(algorithm)));
  }
  if (family == "sendrecv") return {1, 1};
  if (n <= 1) return {0, 0};
  const double nn = n;
  const double spread = (nn - 1) / nn;
  const double lg = log2_steps(n);
  if (family == "all_reduce") {
    return algorithm == Algorithm::Ring ? Terms{2 * (nn - 1), 2 * spread} : Terms{lg, lg};
  }
  if (family == "all_gather" || family == "reduce_scatter") {
    return algorithm == Algorithm::Ring ? Terms{nn - 1, spread} : Terms{lg, spread};
  }
  if (family == "broadcast" || family == "reduce") {
    return algorithm == Algorithm::Ring ? Terms{nn - 1, 1} : Terms{lg, lg};
  }
  if (family == "gather" || family == "scatter") {
    return algorithm == Algorithm::Tree ? Terms{lg, spread} : Terms{nn - 1, spread};
  }
  if (family == "all_to_all") return {nn - 1, spread};
  return {lg, 0};  // barrier
}

int fewest_members_per_node(int n, int ranks_per_node) {
  if (ranks_per_node <= 0 || ranks_per_node >= n) return n;
  const int last = n % ranks_per_node;
  return last == 0 ? ranks_per_node : last;
}

namespace {
// The families whose steps NCCL spreads over one channel per rail between nodes.
bool uses_rails(std::string_view family) {
  return family == "all_reduce" || family == "all_gather" || family == "reduce_scatter" ||
         family == "broadcast" || family == "reduce";
}
}  // namespace

Prediction predict(const CostModel& model, std::string_view family, int n, double bytes,
                   LinkClass link, int members_per_node, int nodes) {
  if (family.empty() || (n <= 1 && family != "sendrecv")) return {};
  if (model.nccl && nccl_prices(family)) {
    // Between nodes at least two, and no more ranks on a node than it has GPUs.
    const int gpus = model.nccl->gpus_per_node;
    const int spanned =
        link == LinkClass::Intra ? 1 : std::max({nodes, 2, (n + gpus - 1) / gpus});
    return nccl_predict(*model.nccl, family, n, std::min(spanned, n), bytes);
  }
  Algorithm chosen = Algorithm::Auto;
  double overhead = 0;
  Link figures = link == LinkClass::Intra ? model.intra : model.inter;
  bool measured_range = false;
  if (auto op = model.ops.find(family); op != model.ops.end()) {
    chosen = op->second.algorithm;
    const auto& segments = op->second.segments(link, n);
    for (const Segment& s : segments) {
      if (bytes <= s.up_to_bytes || &s == &segments.back()) {
        // A range that leaves the algorithm open keeps the op's own choice.
        if (s.algorithm != Algorithm::Auto) chosen = s.algorithm;
        overhead = s.overhead_s;
        figures = Link{s.alpha_s, s.beta_Bps};
        measured_range = true;
        break;
      }
    }
  }
  // A size range is what was measured (rails included); the link's figures are one rail's.
  if (link == LinkClass::Inter && !measured_range && model.inter_rails > 1 && uses_rails(family)) {
    const int rails = std::clamp(members_per_node, 1, model.inter_rails);
    figures.beta_Bps = std::min(figures.beta_Bps * rails, model.intra.beta_Bps);
  }
  if (chosen != Algorithm::Auto) {
    return {
        overhead + link_time(terms(family, chosen, n), figures.alpha_s, figures.beta_Bps, bytes),
        chosen, {}, {}};
  }
  Prediction best{unlimited, Algorithm::Auto, {}, {}};
  for (Algorithm a : algorithms_for(family)) {
    double t = overhead + link_time(terms(family, a, n), figures.alpha_s, figures.beta_Bps, bytes);
    if (t < best.seconds) best = {t, a, {}, {}};
  }
  return best;
}

}  // namespace ranks::sim
