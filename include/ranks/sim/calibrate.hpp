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

}  // namespace ranks::sim
