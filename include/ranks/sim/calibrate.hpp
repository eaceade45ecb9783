#pragma once
// Fitting a cost model to measurements (`ranks calibrate`): for each op family and link class,
// weighted least squares of time = overhead + steps(n) * alpha + factor(n) * bytes / beta over
// every measured size and world size (for world sizes nobody measured), and again per measured
// world size (which wins at that size), in up to eight size ranges (by default), each with the
// algorithm whose shape fits best. Weights are 1 / time, so the fit minimises relative error, which
// is what the report's error table measures.

#include <string>
#include <vector>

#include "ranks/sim/cost_model.hpp"

namespace ranks::sim {

struct Sample {
  std::string family;  // op_family(): all_reduce, ..., sendrecv
  int n = 2;           // world size
  LinkClass link = LinkClass::Intra;
  double bytes = 0;          // nccl-tests' size
  double seconds = 0;        // measured time per op
  int members_per_node = 1;  // on the least populated node (see CostModel::inter_rails)
  int nodes = 1;             // the nodes the ranks span
};

struct CalibrationOptions {
  int max_segments = 8;
  int min_sizes_per_segment = 1;
};

// The fitted model (name and backend as given). Families with no samples are not in `ops`; the
// links take sendrecv's fit (one message: the definition of alpha and beta) when it was measured.
CostModel calibrate(const std::vector<Sample>& samples, const std::string& name,
                    const std::string& backend, const CalibrationOptions& = {});

// |predicted - measured| / measured under the model.
double relative_error(const CostModel& model, const Sample& sample);

// The physical figures of an NCCL system fitted to measurements: the base model (a preset or a
// file with an "nccl" object) with those of its NcclSystem figures that the samples say
// something about refitted (NVLink's per-link rate where a node holds several ranks, the NIC's
// rate where runs span nodes, the point-to-point efficiencies where all_to_all, gather or
// scatter was measured, and always the latency scale, the launch overhead and the pipeline
// chunk), minimising the mean squared log of predicted / measured time. NCCL's choice of
// algorithm and protocol follows from the fitted system, as NCCL's follows from the hardware.
struct NcclFigure {
  std::string name;  // the model file's key, e.g. "nvlink_link_GBps"
  double base = 0;
  double fitted = 0;
};
struct NcclCalibration {
  CostModel model;
  std::vector<NcclFigure> figures;
};
// InvalidArgument when base has no NCCL system or no sample is of an op it prices.
NcclCalibration calibrate_nccl(const std::vector<Sample>& samples, const CostModel& base,
                               const std::string& name);

// The accuracy criterion of reports/cost_model.md: predicted / measured bus bandwidth from
// 1 MiB up (measured time / predicted), predicted / measured time below; a point is within when
// the ratio is within 20 % (35 % below 1 MiB).
double criterion_ratio(const CostModel& model, const Sample& sample);
bool within_criterion(const Sample& sample, double ratio);

}  // namespace ranks::sim
