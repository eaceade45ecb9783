// Fitting an NCCL system's physical figures to measurements (ranks calibrate --nccl): a
// coordinate search, each figure in turn stepped up and down by shrinking factors while the
// mean squared log error falls. The error surface has steps (NCCL's graphs pick speeds from a
// table, its tuner switches algorithms), which a search by trial crosses and a gradient does not.

#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "ranks/errors.hpp"
#include "ranks/sim/calibrate.hpp"

namespace ranks::sim {

namespace {

int per_node(const Sample& s) { return s.nodes > 1 ? s.n / s.nodes : s.n; }

bool point_to_point(const std::string& family) {
  return family == "all_to_all" || family == "gather" || family == "scatter";
}

double predicted(const CostModel& model, const Sample& s) {
  return predict(model, s.family, s.n, s.bytes, s.nodes > 1 ? LinkClass::Inter : LinkClass::Intra,
                 s.members_per_node, s.nodes)
      .seconds;
}

// A figure the search may move: where it lives, its bounds, and whether its steps are added
// (a launch overhead may be 0) or multiplied.
struct Knob {
  const char* name;
  double NcclSystem::*field;
  double low;
  double high;
  bool additive;
};

}  // namespace

double criterion_ratio(const CostModel& model, const Sample& sample) {
  const double p = predicted(model, sample);
  return sample.bytes >= (1 << 20) ? sample.seconds / p : p / sample.seconds;
}

bool within_criterion(const Sample& sample, double ratio) {
  return std::abs(ratio - 1) <= (sample.bytes >= (1 << 20) ? 0.20 : 0.35);
}

NcclCalibration calibrate_nccl(const std::vector<Sample>& all, const CostModel& base,
                               const std::string& name) {
  if (!base.nccl) {
    throw InvalidArgument(fmt::format(
        "cost model '{}' has no NCCL system (\"nccl\") to calibrate; start from h100-nvlink-ib, "
        "a100-nvlink-ib or a model file with an \"nccl\" object",
        base.name));
  }
  std::vector<Sample> samples;
  bool several_per_node = false, several_nodes = false, p2p_node = false, p2p_nodes = false;
  for (const Sample& s : all) {
    if (!nccl_prices(s.family) || s.n < 2 || !(s.seconds > 0)) continue;
    if (per_node(s) > base.nccl->gpus_per_node) {
      throw InvalidArgument(fmt::format(
          "a measurement of {} ranks with {} on a node does not fit '{}' ({} GPUs per node)", s.n,
          per_node(s), base.name, base.nccl->gpus_per_node));
    }
    samples.push_back(s);
    several_per_node |= per_node(s) > 1;
    several_nodes |= s.nodes > 1;
    p2p_node |= point_to_point(s.family) && per_node(s) > 1;
    p2p_nodes |= point_to_point(s.family) && s.nodes > 1;
  }
  if (samples.empty()) {
    throw InvalidArgument(
        "no measurement of an op NCCL's model prices (all_reduce, all_gather, reduce_scatter, "
        "broadcast, reduce, all_to_all, gather, scatter) on 2 or more ranks");
  }
  std::vector<Knob> knobs = {
      {"latency_scale", &NcclSystem::latency_scale, 0.1, 10, false},
      {"launch_us", &NcclSystem::launch_us, 0, 1000, true},
      {"fill_chunk_KiB", &NcclSystem::fill_chunk_KiB, 1, 4096, false},
  };
  if (several_per_node) {
    knobs.push_back({"nvlink_link_GBps", &NcclSystem::nvlink_link_GBps, 0.1, 1000, false});
  }
  if (several_nodes) knobs.push_back({"nic_Gbps", &NcclSystem::nic_Gbps, 1, 10000, false});
  if (p2p_node) {
    knobs.push_back(
        {"p2p_nvlink_efficiency", &NcclSystem::p2p_nvlink_efficiency, 0.05, 1, false});
  }
  if (p2p_nodes) {
    knobs.push_back({"p2p_net_efficiency", &NcclSystem::p2p_net_efficiency, 0.05, 1, false});
  }

  CostModel model = base;
  model.name = name;
  model.description = fmt::format("{}, NCCL figures fitted to {} measurements", base.description,
                                  samples.size());
  model.backend = "nccl";
  auto loss = [&] {
    double sum = 0;
    for (const Sample& s : samples) sum += std::pow(std::log(predicted(model, s) / s.seconds), 2);
    return sum / static_cast<double>(samples.size());
  };
  double best = loss();
  for (double step : {0.5, 0.25, 0.1, 0.05, 0.02, 0.01, 0.005}) {
    for (bool moved = true; moved;) {
      moved = false;
      for (const Knob& k : knobs) {
        double& value = (*model.nccl).*k.field;
        for (int direction : {1, -1}) {
          const double old = value;
          const double candidate =
              k.additive ? old + direction * step * 8 : old * (1 + direction * step);
          value = std::clamp(candidate, k.low, k.high);
          if (value == old) continue;
          const double trial = loss();
          if (trial < best - 1e-12) {
            best = trial;
            moved = true;
            break;
          }
          value = old;
        }
      }
    }
  }
  NcclCalibration out{model, {}};
  for (const Knob& k : knobs) out.figures.push_back({k.name, (*base.nccl).*k.field, (*model.nccl).*k.field});
  out.model.sources.push_back(fmt::format(
      "fitted by ranks calibrate --nccl {}: {} to {} measurements (mean squared log error {:.4f})",
      base.name,
      [&] {
        std::string names;
        for (const Knob& k : knobs) names += (names.empty() ? "" : ", ") + std::string(k.name);
        return names;
      }(),
      samples.size(), best));
  return out;
}

}  // namespace ranks::sim
