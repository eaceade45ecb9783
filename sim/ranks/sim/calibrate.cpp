#include "ranks/sim/calibrate.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <optional>

namespace ranks::sim {

namespace {

// Unknowns, in order: overhead, alpha, 1/beta (all seconds-based, all >= 0).
using Params = std::array<double, 3>;

struct Fit {
  Segment segment;
  double max_error = unlimited;
};

std::array<double, 3> row(const std::string& family, Algorithm a, const Sample& s) {
  Terms t = terms(family, a, s.n);
  return {1.0, t.steps, t.factor * s.bytes};
}

// Solves the normal equations of the weighted problem restricted to the unknowns in `mask`;
// nullopt when they are singular. Columns are scaled first: bytes and seconds differ by 1e15.
// Each sample's relative error counts with its weight (all 1 when none are given).
std::optional<Params> solve(const std::vector<std::array<double, 3>>& rows,
                            const std::vector<double>& y, unsigned mask,
                            const std::vector<double>& weights = {}) {
  std::vector<int> cols;
  for (int c = 0; c < 3; ++c) {
    if (mask & (1u << c)) cols.push_back(c);
  }
  const size_t k = cols.size();
  std::array<double, 3> scale{1, 1, 1};
  for (size_t j = 0; j < k; ++j) {
    double sum = 0;
    for (size_t i = 0; i < rows.size(); ++i) sum += std::pow(rows[i][cols[j]] / y[i], 2);
    scale[j] = sum > 0 ? std::sqrt(sum) : 0;
    if (scale[j] == 0) return std::nullopt;
  }
  // Weighted by 1/y: each equation is row/y . p = 1.
  std::array<std::array<double, 4>, 3> m{};
  for (size_t i = 0; i < rows.size(); ++i) {
    const double w = weights.empty() ? 1.0 : weights[i];
    for (size_t a = 0; a < k; ++a) {
      const double xa = rows[i][cols[a]] / y[i] / scale[a];
      for (size_t b = 0; b < k; ++b) m[a][b] += w * xa * rows[i][cols[b]] / y[i] / scale[b];
      m[a][k] += w * xa;
    }
  }
  for (size_t c = 0; c < k; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < k; ++r) {
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    }
    if (std::abs(m[pivot][c]) < 1e-10) return std::nullopt;
    std::swap(m[c], m[pivot]);
    for (size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (size_t j = c; j <= k; ++j) m[r][j] -= f * m[c][j];
    }
  }
  Params p{0, 0, 0};
  for (size_t j = 0; j < k; ++j) p[static_cast<size_t>(cols[j])] = m[j][k] / m[j][j] / scale[j];
  return p;
}

Segment to_segment(Algorithm a, const Params& p) {
  Segment s;
  s.algorithm = a;
  s.overhead_s = p[0];
  s.alpha_s = p[1];
  s.beta_Bps = p[2] > 0 ? 1.0 / p[2] : unlimited;
  return s;
}

double max_error(const std::string& family, const Segment& seg,
                 const std::vector<const Sample*>& samples) {
  double worst = 0;
  for (const Sample* s : samples) {
    Terms t = terms(family, seg.algorithm, s->n);
    double predicted = seg.overhead_s + t.steps * seg.alpha_s +
                       (std::isinf(seg.beta_Bps) ? 0 : t.factor * s->bytes / seg.beta_Bps);
    worst = std::max(worst, std::abs(predicted - s->seconds) / s->seconds);
  }
  return worst;
}

// The best non-negative fit of one size range: every algorithm, every subset of unknowns
// (a negative unknown means the data do not support it, so it is dropped and the rest refitted).
// "Best" is the smallest worst relative error, the figure a model is judged by: each least-squares
// fit is refined towards the minimax fit (Lawson's reweighting: a sample's weight grows with its
// error), keeping whichever iterate has the smallest worst error.
Fit fit_range(const std::string& family, const std::vector<const Sample*>& samples) {
  constexpr int kLawsonSteps = 20;
  Fit best;
  for (Algorithm a : algorithms_for(family)) {
    std::vector<std::array<double, 3>> rows;
    std::vector<double> y;
    for (const Sample* s : samples) {
      rows.push_back(row(family, a, *s));
      y.push_back(s->seconds);
    }
    // Fewer unknowns first, so an equally good simpler fit wins. A fit keeps at least one
    // sample more than it has unknowns (one unknown for one sample): two sizes fitted by a
    // latency and a bandwidth are met exactly whatever they are, so their range's zero error
    // would say nothing, and noise would earn ranges of its own.
    const int most_unknowns = std::max(1, static_cast<int>(samples.size()) - 1);
    for (unsigned mask : {2u, 4u, 6u, 1u, 5u, 3u, 7u}) {
      if (std::popcount(mask) > most_unknowns) continue;
      std::vector<double> weights(samples.size(), 1.0);
      for (int step = 0; step <= kLawsonSteps; ++step) {
        auto p = solve(rows, y, mask, weights);
        if (!p || (*p)[0] < 0 || (*p)[1] < 0 || (*p)[2] < 0) break;
        Segment seg = to_segment(a, *p);
        double err = max_error(family, seg, samples);
        if (err < best.max_error * (1 - 1e-9)) best = Fit{seg, err};
        double total = 0;
        for (size_t i = 0; i < samples.size(); ++i) {
          const double predicted =
              rows[i][0] * (*p)[0] + rows[i][1] * (*p)[1] + rows[i][2] * (*p)[2];
          weights[i] *= std::abs(predicted - y[i]) / y[i];
          total += weights[i];
        }
        if (!(total > 0)) break;  // an exact fit: nothing left to spread
        for (double& w : weights) w /= total;
      }
    }
  }
  return best;
}

// The best plan of size ranges for one family. A plan is scored by the sum, over its ranges, of
// each range's worst error times its sample count (each sample counts with its own range's worst
// error: a range that one noisy size keeps at 25 % must not stop another range from fitting its
// sizes to 5 %, which judging the plan by its single worst point would), so for a given number of
// ranges the best plan is found by dynamic programming over contiguous ranges of sorted sizes:
// each of the O(sizes^2) ranges is fitted once, not once per plan that contains it.
std::vector<Segment> fit_family(const std::string& family, const std::vector<const Sample*>& all,
                                const CalibrationOptions& options) {
  std::vector<double> sizes;
  for (const Sample* s : all) sizes.push_back(s->bytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const size_t n_sizes = sizes.size();
  const size_t min_sizes = std::max<size_t>(1, static_cast<size_t>(options.min_sizes_per_segment));
  const size_t max_parts = static_cast<size_t>(std::max(1, options.max_segments));

  // fits[b][e]: the range of sizes [b, e) and its cost (worst error x samples).
  struct RangeFit {
    Fit fit;
    double cost = unlimited;
    bool fitted = false;
  };
  std::vector<std::vector<RangeFit>> fits(n_sizes, std::vector<RangeFit>(n_sizes + 1));
  auto range = [&](size_t b, size_t e) -> const RangeFit& {
    RangeFit& r = fits[b][e];
    if (!r.fitted) {
      r.fitted = true;
      std::vector<const Sample*> part;
      for (const Sample* s : all) {
        if (s->bytes >= sizes[b] && s->bytes <= sizes[e - 1]) part.push_back(s);
      }
      r.fit = fit_range(family, part);
      r.fit.segment.up_to_bytes = e == n_sizes ? unlimited : sizes[e - 1];
      r.cost = r.fit.max_error * static_cast<double>(part.size());
    }
    return r;
  };

  // best[p][e]: the cheapest cut of sizes [0, e) into p ranges; from[p][e] where its last begins.
  std::vector<std::vector<double>> best(max_parts + 1, std::vector<double>(n_sizes + 1, unlimited));
  std::vector<std::vector<size_t>> from(max_parts + 1, std::vector<size_t>(n_sizes + 1, 0));
  std::vector<Segment> chosen;
  double chosen_score = unlimited;
  for (size_t parts = 1; parts <= max_parts; ++parts) {
    // One range may be any length; with several, each holds at least min_sizes sizes.
    const size_t least = parts == 1 ? 1 : min_sizes;
    for (size_t e = parts * least; e <= n_sizes; ++e) {
      for (size_t b = (parts - 1) * least; b + least <= e; ++b) {
        const double before = parts == 1 ? (b == 0 ? 0.0 : unlimited) : best[parts - 1][b];
        if (before == unlimited) continue;
        const double cost = before + range(b, e).cost;
        if (cost < best[parts][e]) {
          best[parts][e] = cost;
          from[parts][e] = b;
        }
      }
    }
    if (best[parts][n_sizes] == unlimited) continue;
    // Another range must earn its keep: cut the worst error by 10% of itself and by 2
    // percentage points, or it is fitting noise.
    const double worst = best[parts][n_sizes] / static_cast<double>(all.size());
    const double score =
        worst * (1 + 0.1 * static_cast<double>(parts - 1)) + 0.02 * static_cast<double>(parts - 1);
    if (score < chosen_score) {
      chosen_score = score;
      chosen.assign(parts, Segment{});
      for (size_t p = parts, e = n_sizes; p > 0; e = from[p][e], --p) {
        chosen[p - 1] = range(from[p][e], e).fit.segment;
      }
    }
  }
  return chosen;
}

}  // namespace

CostModel calibrate(const std::vector<Sample>& samples, const std::string& name,
                    const std::string& backend, const CalibrationOptions& options) {
  CostModel model;
  model.name = name;
  model.backend = backend;
  model.description = "fitted by ranks calibrate from " + std::to_string(samples.size()) +
                      " measurements" + (backend.empty() ? "" : " on " + backend);
  model.sources = {"ranks bench measurements"};
  std::map<std::pair<std::string, LinkClass>, std::vector<const Sample*>> groups;
  for (const Sample& s : samples) {
    // One rank moves nothing: the simulator prices its ops at 0, so its times (the call's own
    // overhead) would only pull the fit for every other world size.
    if (s.seconds > 0 && s.n >= 2) groups[{s.family, s.link}].push_back(&s);
  }
  for (const auto& [key, group] : groups) {
    const auto& [family, link] = key;
    OpModel& op = model.ops[family];
    (link == LinkClass::Intra ? op.intra : op.inter) = fit_family(family, group, options);
    std::map<int, std::vector<const Sample*>> by_n;
    for (const Sample* s : group) by_n[s->n].push_back(s);
    if (by_n.size() < 2) continue;  // the fit above is that world size's fit
    for (const auto& [n, samples_at_n] : by_n) {
      (link == LinkClass::Intra ? op.intra_at : op.inter_at)[n] =
          fit_family(family, samples_at_n, options);
    }
  }
  if (auto it = model.ops.find("sendrecv"); it != model.ops.end()) {
    // The largest sizes' range: the one that sets bandwidth.
    auto as_link = [](const Segment& s) { return Link{s.overhead_s + s.alpha_s, s.beta_Bps}; };
    if (!it->second.intra.empty()) model.intra = as_link(it->second.intra.back());
    if (!it->second.inter.empty()) model.inter = as_link(it->second.inter.back());
  }
  return model;
}

double relative_error(const CostModel& model, const Sample& sample) {
  double predicted =
      predict(model, sample.family, sample.n, sample.bytes, sample.link, sample.members_per_node,
              sample.nodes)
          .seconds;
  return std::abs(predicted - sample.seconds) / sample.seconds;
}

}  // namespace ranks::sim
