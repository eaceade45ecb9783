// NCCL's tuner as the cost model's terms. For a collective on n ranks over some nodes, NCCL
// (src/graph/search.cc) builds a graph per algorithm: a number of channels and a speed per channel
// within and between nodes; its tuner (src/graph/tuning.cc) gives each enabled (algorithm,
// protocol) a latency and a bandwidth from that graph and its constants, and runs the call with
// the cheapest predicted time. Here the same graphs, constants and choice, for NVSwitch systems
// with a NIC per GPU (the systems the presets describe), with NCCL's figures as they are; then
// the time nccl-tests measures for the chosen entry, which adds what the tuner leaves out (the
// fitted figures of NcclSystem). reports/cost_model/MODEL.md is the derivation, section by section.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <vector>

#include "ranks/errors.hpp"
#include "ranks/sim/cost_model.hpp"

namespace ranks::sim {

namespace {

enum Algo { Tree, Ring, Nvls, NvlsTree, Pat, algo_count };
enum Proto { LL, LL128, Simple, proto_count };

constexpr std::array<std::string_view, algo_count> algo_names = {"tree", "ring", "nvls",
                                                                 "nvls_tree", "pat"};
constexpr std::array<std::string_view, proto_count> proto_names = {"LL", "LL128", "Simple"};

using PerProto = std::array<double, proto_count>;
using PerAlgo = std::array<PerProto, algo_count>;
// By min(nodes, 3) - 1: one node, two, three or more (tuning.cc's second index).
using PerNodes = std::array<double, 3>;

// tuning.cc's latency constants (µs): a base per algorithm, and a latency per hop by link.
constexpr PerAlgo base_latency = {{{6.8, 14.0, 8.4},
                                   {6.6, 14.0, 8.4},
                                   {0.0, 0.0, 0.0},
                                   {0.0, 0.0, 0.0},
                                   {8.0, 8.0, 8.0}}};
constexpr PerAlgo nvlink_hop_latency = {{{0.6, 1.25, 4.0},
                                         {0.6, 1.9, 3.4},
                                         {0.0, 0.0, 25.0},
                                         {0.0, 0.0, 25.0},
                                         {0.0, 0.0, 4.0}}};
constexpr PerAlgo net_hop_latency = {{{5.0, 8.5, 14.0},
                                      {2.7, 4.0, 14.0},
                                      {0.0, 0.0, 18.0},
                                      {0.0, 0.0, 20.9},
                                      {0.0, 0.0, 14.0}}};

// A tree all_reduce's bandwidth correction by log2(bytes / 64), 64 B to 256 MiB.
constexpr std::array<std::array<double, 24>, proto_count> tree_correction = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9},
}};

constexpr int max_channels = 64;       // MAXCHANNELS
constexpr int ring_max_channels = 32;  // a ring graph's channels: MAXCHANNELS / 2
constexpr int nvls_max_arity = 32;     // NCCL_MAX_NVLS_ARITY

// The rows of tuning.cc and search.cc that differ by GPU generation.
struct ArchRow {
  double ll_max_one_node;
  PerNodes per_channel_ring_ll128;
  PerNodes per_channel_tree_ll128;
  PerNodes per_channel_tree;
  PerNodes per_channel_nvls_tree;
  double nvls_efficiency;
  std::span<const double> speeds_intra;  // search.cc's speed arrays, fastest first
  std::span<const double> speeds_inter;
};

constexpr std::array<double, 13> ampere_intra = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
constexpr std::array<double, 19> ampere_inter = {48, 30, 28, 24, 20, 18, 15, 12,   10,  9,
                                                 7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};
constexpr std::array<double, 11> hopper_intra = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
constexpr std::array<double, 17> hopper_inter = {48, 45, 42,  40,  30,  24,   22,  20, 17.5,
                                                 15, 12, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12};

const ArchRow ampere = {87.7,          {20, 20, 20},      {20, 20, 20}, {24.0, 23.6, 17.8},
                        {24, 23.6, 17.8}, 0.0,            ampere_intra, ampere_inter};
const ArchRow hopper = {141.0,         {36.7, 36.7, 36.7}, {36.7, 36.7, 29.0}, {38.7, 41.4, 36.0},
                        {0, 57.7, 45.5}, 0.85,            hopper_intra,       hopper_inter};

const ArchRow& arch_row(const NcclSystem& s) { return s.arch == "ampere" ? ampere : hopper; }

// Between nodes NCCL caps LL's bandwidth by the host CPU (llMaxBws rows), and charges each ring
// step a network overhead (getNetOverhead), three times over for Simple.
PerNodes ll_max_between_nodes(const NcclSystem& s) {
  return s.cpu == "amd" ? PerNodes{0, 22.5, 19.0} : PerNodes{0, 39.0, 20.4};
}
double net_overhead_us(const NcclSystem& s) { return s.cpu == "amd" ? 2.0 : 1.0; }

constexpr double ring_simple_plateau = 1.4;

int log2i(double x) { return x >= 1 ? static_cast<int>(std::floor(std::log2(x))) : 0; }

double nvlink_GBps(const NcclSystem& s) { return s.nvlink_links * s.nvlink_link_GBps; }
double nic_GBps(const NcclSystem& s) { return s.nic_Gbps / 8; }

// A graph: channels and the speed of one channel within and between nodes (GB/s).
struct Graph {
  int channels = 0;
  double intra = 0;
  double inter = 0;
};

// ncclTopoDupChannels: fast links get twice the channels at half the speed.
Graph duplicated(Graph g, const NcclSystem& s) {
  if (g.intra < 25 || (s.arch != "ampere" && g.intra < 50 && g.channels > 4)) return g;
  const int doubled = std::min(2 * g.channels, ring_max_channels);
  const double speed = g.intra / std::ceil(static_cast<double>(doubled) / g.channels);
  return {doubled, speed, speed};
}

// The first (fastest) speed that satisfies `fits`, else the slowest.
template <class Fits>
double first_speed(std::span<const double> speeds, Fits fits) {
  for (double x : speeds) {
    if (fits(x)) return x;
  }
  return speeds.back();
}

Graph ring_graph(const NcclSystem& s, int per_node, int nodes) {
  const ArchRow& a = arch_row(s);
  const double total = nvlink_GBps(s);
  if (nodes == 1) {
    // Search from the fastest speed the links carry, downwards while within half of it, for the
    // most channels x speed; stop once the links are full.
    auto speeds = a.speeds_intra;
    size_t i = 0;
    while (i + 1 < speeds.size() && speeds[i] > total) ++i;
    const double first = speeds[i];
    Graph best;
    while (true) {
      const double speed = speeds[i];
      const int channels = std::min(ring_max_channels, static_cast<int>(total / speed + 1e-9));
      if (channels >= 1 && channels * speed > best.channels * best.intra) {
        best = {channels, speed, speed};
      }
      if (channels * speed >= total || channels >= ring_max_channels) break;
      if (i + 1 < speeds.size() && speeds[i + 1] / first > 0.49) {
        ++i;
      } else {
        break;
      }
    }
    Graph g = duplicated(best, s);
    // Second pass: a faster speed on the same channels, where the links allow it.
    for (double faster : speeds) {
      if (faster > g.intra && g.channels * faster <= total) g.intra = g.inter = faster;
    }
    return g;
  }
  const int rails = std::max(1, std::min(per_node, s.nics_per_node));
  const double nic = nic_GBps(s);
  const double speed =
      first_speed(a.speeds_inter, [&](double x) { return x <= nic && rails * x <= total; });
  const int channels =
      std::min(ring_max_channels, rails * std::max(1, static_cast<int>(nic / speed + 1e-9)));
  return duplicated({channels, speed, speed}, s);
}

// The tree's graph is the ring's; on two nodes search.cc raises its speed within the node to
// below twice the speed between nodes.
Graph tree_graph(const NcclSystem& s, int per_node, int nodes) {
  Graph g = ring_graph(s, per_node, nodes);
  if (nodes == 2) {
    const double total = nvlink_GBps(s);
    for (double x : arch_row(s).speeds_inter) {
      if (x > g.intra && x < 2 * g.inter && g.channels * x <= total) g.intra = x;
    }
  }
  return g;
}

// NVLS: one channel per local rank; between nodes the speed is bound by the NIC.
std::optional<Graph> nvls_graph(const NcclSystem& s, int per_node, int nodes) {
  if (!(s.nvls && s.nvswitch) || per_node < 2) return std::nullopt;
  const ArchRow& a = arch_row(s);
  const double total = nvlink_GBps(s);
  const int channels = std::min(nvls_max_arity, per_node);
  auto speeds = nodes == 1 ? a.speeds_intra : a.speeds_inter;
  const double intra = first_speed(speeds, [&](double x) { return channels * x <= total; });
  const double cap =
      nodes == 1 ? speeds[0] : first_speed(speeds, [&](double x) { return x <= nic_GBps(s); });
  double inter = intra;
  for (double x : speeds) {
    if (x < 2 * intra && x <= cap) inter = std::max(inter, x);
  }
  return Graph{channels, intra, inter};
}

// The communicator's channels (connect.cc): the ring's, doubled; on Hopper between nodes, doubled
// again while few and fast.
int communicator_channels(const NcclSystem& s, const Graph& ring, int nodes) {
  int channels = std::min(max_channels, 2 * ring.channels);
  if (s.arch != "ampere" && nodes > 1 && ring.intra > 45 && channels < 16) channels *= 2;
  return channels;
}

// NCCL's collectives with a tuner entry; reduce is priced as broadcast (both are chains over
// the ring with n steps and one hop of latency).
bool tuned(std::string_view family) {
  return family == "all_reduce" || family == "all_gather" || family == "reduce_scatter" ||
         family == "broadcast" || family == "reduce";
}

bool chain(std::string_view family) { return family == "broadcast" || family == "reduce"; }
bool gathers(std::string_view family) {
  return family == "all_gather" || family == "reduce_scatter";
}

bool enabled(Algo algo, std::string_view family, int per_node, int nodes) {
  if (chain(family)) return algo == Ring;
  if (gathers(family) && algo != Ring && algo != Nvls && algo != Pat) return false;
  if (family == "all_reduce" && algo == Pat) return false;
  if (algo == NvlsTree && (nodes == 1 || family != "all_reduce")) return false;
  if (algo == Nvls && nodes > 1) return false;  // NVLS between nodes needs CollNet (off)
  if (algo == Pat && per_node != 1) return false;
  return true;
}

struct Layout {
  int n;
  int nodes;
  int per_node;
};

Layout layout_of(const NcclSystem& s, int n, int nodes) {
  if (nodes < 1 || nodes > n) {
    throw InvalidArgument(fmt::format("cost model: {} ranks cannot span {} nodes", n, nodes));
  }
  const int per_node = n / nodes;
  if ((n + nodes - 1) / nodes > s.gpus_per_node) {
    throw InvalidArgument(
        fmt::format("cost model: {} ranks on {} nodes put more ranks on a node than its {} GPUs "
                    "(NCCL runs one rank per GPU)",
                    n, nodes, s.gpus_per_node));
  }
  return {n, nodes, per_node};
}

// Every enabled (algorithm, protocol) with NCCL's latency, bandwidth and channels.
struct Entry {
  Algo algo;
  Proto proto;
  double latency_us;
  double bandwidth_GBps;
  int channels;
};

std::vector<Entry> entries(const NcclSystem& s, std::string_view family, const Layout& l) {
  const ArchRow& a = arch_row(s);
  const int n = l.n;
  const int index = std::min(l.nodes, 3) - 1;
  const double ll_max = l.nodes == 1 ? a.ll_max_one_node : ll_max_between_nodes(s)[index];
  const double steps = family == "all_reduce" ? 2.0 * (n - 1) : gathers(family) ? n - 1.0 : n;
  std::array<std::optional<Graph>, algo_count> graphs;
  graphs[Ring] = ring_graph(s, l.per_node, l.nodes);
  graphs[Tree] = graphs[Pat] = tree_graph(s, l.per_node, l.nodes);
  graphs[Nvls] = graphs[NvlsTree] = nvls_graph(s, l.per_node, l.nodes);
  std::vector<Entry> out;
  for (int ai = 0; ai < algo_count; ++ai) {
    const Algo algo = static_cast<Algo>(ai);
    if (!graphs[algo] || !enabled(algo, family, l.per_node, l.nodes)) continue;
    const Graph& g = *graphs[algo];
    const bool nvls = algo == Nvls || algo == NvlsTree;
    for (int pi = 0; pi < proto_count; ++pi) {
      const Proto proto = static_cast<Proto>(pi);
      if ((nvls || algo == Pat) && proto != Simple) continue;
      if (nvls && g.channels < 2) continue;
      // Bandwidth: per channel, times channels, with each protocol's caps.
      double bw = l.nodes <= 2 ? g.intra : g.inter;
      if (nvls) {
        double intra = g.intra * a.nvls_efficiency * (g.channels - 1) / g.channels;
        intra *= family == "all_reduce" ? 2.0 : (l.per_node - 1.0) / l.per_node;
        const double inter = g.inter * (l.nodes <= 2 && algo == NvlsTree ? 2.0 : 1.0);
        bw = std::min(intra, inter);
        if (algo == NvlsTree) bw = std::min(bw, a.per_channel_nvls_tree[index]);
      }
      double bus = g.channels * bw;
      if (algo == Ring && proto == LL) bus = std::min(ll_max, bus * 0.5);
      if (algo == Ring && proto == LL128) {
        bus = std::min(bus * 0.92, g.channels * a.per_channel_ring_ll128[index]);
      }
      if (algo == Tree && family == "all_reduce") {
        bus = std::min(bus * 0.92, g.channels * a.per_channel_tree[index]);
      }
      if (algo == Tree && proto == LL) bus = std::min(bus / 3.8, ll_max);
      if (algo == Tree && proto == LL128) {
        bus = std::min(bus * (l.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                       g.channels * a.per_channel_tree_ll128[index]);
      }
      if (algo == Pat) bus *= 0.75;
      // Bus bandwidth to algorithm bandwidth; gathers other than the ring keep bus bandwidth.
      if (!(algo != Ring && gathers(family))) {
        bus *= (algo == Ring || nvls) ? n / steps : 0.5;
      }
      // Latency.
      double latency = base_latency[algo][proto];
      const double intra_hop = nvlink_hop_latency[algo][proto];
      double inter_hop = l.per_node == 1 ? net_hop_latency[Tree][proto] : net_hop_latency[algo][proto];
      inter_hop += s.latency_inter_us * (proto == Simple ? 2 : 1);
      const int node_levels = log2i(l.nodes);
      switch (algo) {
        case Ring:
          if (chain(family)) {
            latency += (l.nodes == 1 ? nvlink_hop_latency : net_hop_latency)[Ring][proto];
          } else {
            const double overhead =
                l.nodes > 1 ? net_overhead_us(s) * (proto == Simple ? 3 : 1) : 0.0;
            const double inter_steps = l.nodes == 1                ? 0.0
                                       : family == "all_reduce" ? 2.0 * (l.nodes - 1)
                                                                   : l.nodes - 1.0;
            latency += (steps - inter_steps) * std::max(intra_hop, overhead) +
                       inter_steps * inter_hop;
          }
          break;
        case Tree:
          latency += 2 * ((l.per_node - 1) * intra_hop + node_levels * inter_hop);
          break;
        case Nvls:
          latency = intra_hop + (l.nodes > 1 ? inter_hop : 0.0);
          break;
        case NvlsTree:
          latency += intra_hop + 2 * node_levels * inter_hop;
          break;
        case Pat:
          latency += node_levels * (inter_hop / 3.5) + n * 2.8;
          break;
        default:
          break;
      }
      out.push_back({algo, proto, latency, bus, g.channels});
    }
  }
  return out;
}

// ncclTopoGetAlgoTime: latency + bytes / bandwidth, with NCCL's corrections for the size.
double tuner_time_us(const Entry& e, double latency_us, std::string_view family, const Layout& l,
                     int comm_channels, double bytes) {
  double bw = e.bandwidth_GBps;
  const int log_size = bytes >= 64 ? log2i(std::floor(bytes / 64)) : -1;
  if (e.algo == Tree && family == "all_reduce" && log_size >= 0 && log_size < 23) {
    bw *= tree_correction[e.proto][static_cast<size_t>(log_size)];
  }
  if (e.algo == Ring && e.proto == Simple && l.nodes > 1 && family == "all_reduce" &&
      bytes / (static_cast<double>(comm_channels) * l.n) >= 64) {
    latency_us *= ring_simple_plateau;
  }
  return latency_us + bytes / (1000.0 * bw);
}

// What the tuner leaves out: before a step's data can go on, the first chunk of it has to
// arrive, so each sequential step also pays one chunk's transfer on its channel. Small calls
// (a step's share below the chunk) pay about one more bytes / bandwidth, large ones a constant.
// LL moves 8-byte lines with their flags and pays nothing.
double fill_us(const NcclSystem& s, const Entry& e, std::string_view family, const Layout& l,
               double bytes) {
  if (e.proto == LL) return 0;
  const bool nvls = e.algo == Nvls || e.algo == NvlsTree;
  const double chunk = (nvls ? s.nvls_chunk_KiB : s.fill_chunk_KiB) * 1024.0;
  if (chunk <= 0) return 0;
  const double channels = e.channels;
  double depth = 0, share = 0;
  switch (e.algo) {
    case Ring:
      depth = family == "all_reduce" ? 2.0 * (l.n - 1) : l.n - 1.0;
      share = chain(family) ? bytes / channels : bytes / (l.n * channels);
      break;
    case Tree:
      depth = 2.0 * ((l.per_node - 1) + log2i(l.nodes));
      share = bytes / channels;
      break;
    case Pat:
      depth = std::max(1, log2i(l.n));
      share = bytes / (l.n * channels);
      break;
    default:  // NVLS: each local rank owns 1/per_node of the buffer on every channel
      depth = l.per_node + (e.algo == NvlsTree ? 2.0 * log2i(l.nodes) : 0.0);
      share = bytes / (l.per_node * channels);
      break;
  }
  const double channel_bytes_per_us = e.bandwidth_GBps / channels * 1000.0;
  return depth * std::min(chunk, share) / channel_bytes_per_us;
}

// all_to_all, gather and scatter: NCCL runs them as grouped sends of bytes / n to each peer, all
// at once; NVLink carries the node's share at the ring's rate, each GPU's share of its node's
// NICs the rest. Latency: the ring's LL base and one NVLink hop; between nodes one network hop
// and the network overhead per remote peer.
double point_to_point_us(const NcclSystem& s, const Layout& l, double bytes) {
  const double piece = bytes / l.n;
  const Graph ring = ring_graph(s, l.per_node, 1);
  const double nvlink = ring.channels * ring.intra * s.p2p_nvlink_efficiency;
  const int rails = std::max(1, std::min(l.per_node, s.nics_per_node));
  const double net = nic_GBps(s) * s.p2p_net_efficiency * rails / l.per_node;
  const double intra_us = l.per_node > 1 ? (l.per_node - 1) * piece / (1000.0 * nvlink) : 0.0;
  const double inter_us = l.nodes > 1 ? (l.n - l.per_node) * piece / (1000.0 * net) : 0.0;
  double latency = base_latency[Ring][LL] + (l.per_node > 1 ? nvlink_hop_latency[Ring][LL] : 0.0);
  if (l.nodes > 1) latency += net_hop_latency[Ring][Simple] + net_overhead_us(s) * (l.n - l.per_node);
  return latency * s.latency_scale + std::max(intra_us, inter_us);
}

struct Priced {
  Entry entry;
  double nccl_time_us;
};

std::vector<Priced> table(const NcclSystem& s, std::string_view family, const Layout& l,
                          double bytes) {
  const int comm_channels = communicator_channels(s, ring_graph(s, l.per_node, l.nodes), l.nodes);
  std::vector<Priced> rows;
  for (const Entry& e : entries(s, family, l)) {
    rows.push_back({e, tuner_time_us(e, e.latency_us, family, l, comm_channels, bytes)});
  }
  // Ties keep NCCL's loop order (algorithms, then protocols), as its strict comparison does.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Priced& x, const Priced& y) { return x.nccl_time_us < y.nccl_time_us; });
  return rows;
}

}  // namespace

bool nccl_prices(std::string_view family) {
  return tuned(family) || family == "all_to_all" || family == "gather" || family == "scatter";
}

std::vector<NcclCost> nccl_costs(const NcclSystem& system, std::string_view family, int n,
                                 int nodes, double bytes) {
  if (!tuned(family)) {
    throw InvalidArgument(fmt::format("cost model: NCCL's tuner has no entry for {}", family));
  }
  const Layout l = layout_of(system, n, nodes);
  std::vector<NcclCost> out;
  for (const Priced& p : table(system, family, l, bytes)) {
    out.push_back({algo_names[p.entry.algo], proto_names[p.entry.proto], p.entry.latency_us,
                   p.entry.bandwidth_GBps, p.entry.channels, p.nccl_time_us});
  }
  return out;
}

Prediction nccl_predict(const NcclSystem& system, std::string_view family, int n, int nodes,
                        double bytes) {
  if (n <= 1) return {};
  const Layout l = layout_of(system, n, nodes);
  if (!tuned(family)) {
    return {(point_to_point_us(system, l, bytes) + system.launch_us) * 1e-6, Algorithm::Direct,
            "p2p", "Simple"};
  }
  const auto rows = table(system, family, l, bytes);
  const Entry& chosen = rows.front().entry;  // a Ring entry is always enabled
  const int comm_channels =
      communicator_channels(system, ring_graph(system, l.per_node, l.nodes), l.nodes);
  const double us = tuner_time_us(chosen, chosen.latency_us * system.latency_scale, family, l,
                                  comm_channels, bytes) +
                    fill_us(system, chosen, family, l, bytes) + system.launch_us;
  const Algorithm shape = chosen.algo == Ring   ? Algorithm::Ring
                          : chosen.algo == Tree ? Algorithm::Tree
                                                : Algorithm::Auto;
  return {us * 1e-6, shape, algo_names[chosen.algo], proto_names[chosen.proto]};
}

}  // namespace ranks::sim
