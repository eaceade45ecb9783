#pragma once
// Runs a multi-rank test body. Every body is written once against the public API and runs on
// each backend this build has: the simulator always (here, in-process); the real backends run
// the same body in one process per rank as they land.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "processes.hpp"
#include "ranks/ranks.hpp"
#include "ranks/sim.hpp"

namespace ranks::testing {

// Whether text contains part, with the text in the failure message.
inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// The tests' simulator options: the mpi table, because it allows every op on cpu tensors (the
// generic bodies test semantics; backend support matrices have their own tests).
inline sim::Options default_options() {
  sim::Options options;
  options.backend = "mpi";
  return options;
}

// default_options() under another backend's rules.
inline sim::Options options_for(const std::string& backend) {
  sim::Options options = default_options();
  options.backend = backend;
  return options;
}

// Runs body on world_size simulated ranks and returns the report.
inline sim::Report simulate(int world_size, const std::function<void()>& body,
                            sim::Options options = default_options()) {
  options.world_size = world_size;
  return sim::run(options, body);
}

// One rank's row of a report (its state, op, group, seq, call site).
inline const sim::RankReport& row(const sim::Report& report, int rank) {
  return report.ranks.at(static_cast<size_t>(rank));
}

// Runs body on world_size ranks and expects every rank to finish; gtest failures inside the body
// are recorded against the running test as usual (all simulated ranks share this thread).
inline void run_ranks(int world_size, const std::function<void()>& body,
                      sim::Options options = default_options()) {
  sim::Report report = simulate(world_size, body, std::move(options));
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
}

// Whether a test_backends() name is the simulator's: "sim" (ranks as fibers of this thread) or
// "sim_threads" (each rank on a thread of its own, sim::Options::rank_threads).
inline bool is_simulated(const std::string& backend) {
  return backend == "sim" || backend == "sim_threads";
}

// Runs body on world_size ranks of backend: simulated in this process, a real backend as
// processes.
inline void run_on(const std::string& backend, int world_size, const std::function<void()>& body) {
  if (is_simulated(backend)) {
    sim::Options options = default_options();
    options.rank_threads = backend == "sim_threads";
    run_ranks(world_size, body, std::move(options));
  } else {
    run_processes(backend, world_size, body);
  }
}

// The backends this build can run test bodies on: the simulator (both ways of running its
// ranks) and every real one built.
inline std::vector<std::string> test_backends() {
  std::vector<std::string> names = {"sim", "sim_threads"};
  for (const char* real : {"gloo", "mpi"}) {
    if (backend_built(real)) names.push_back(real);
  }
  return names;
}

// Cases for a body whose outcome depends on the backend's rules: the simulator under gloo's and
// under Open MPI's ("sim_gloo", "sim_mpi"), then each real backend built ("gloo", "mpi").
inline std::vector<std::string> rule_cases() {
  std::vector<std::string> cases = {"sim_gloo", "sim_mpi"};
  for (const std::string& b : test_backends()) {
    if (!is_simulated(b)) cases.push_back(b);
  }
  return cases;
}

// The backend whose rules a rule_cases() case follows.
inline std::string rules_of(const std::string& rule_case) {
  return rule_case.starts_with("sim_") ? rule_case.substr(4) : rule_case;
}

// Runs body on world_size ranks for a rule_cases() case: simulated under those rules, or as
// processes on the real backend.
inline void run_rule_case(const std::string& rule_case, int world_size,
                          const std::function<void()>& body) {
  if (rule_case.starts_with("sim_")) {
    run_ranks(world_size, body, options_for(rules_of(rule_case)));
  } else {
    run_on(rule_case, world_size, body);
  }
}

// The value a test stores at (rank, index): small, so sums and products stay exact in every
// dtype (bfloat16 holds integers up to 256 exactly; 64 ranks x 3 = 192).
inline int64_t small_value(int rank, int64_t i) { return (rank * 7 + i * 3) % 4; }

// What storing v in dtype and reading it back gives, computed without the library: integers wrap
// modulo 2^bits, bool is v != 0, and the small values the tests use are exact in every float.
inline double stored(DType dtype, int64_t v) {
  switch (dtype) {
    case DType::Bool:
      return v != 0 ? 1.0 : 0.0;
    case DType::UInt8:
      return static_cast<double>(static_cast<uint8_t>(v));
    case DType::Int8:
      return static_cast<double>(static_cast<int8_t>(v));
    case DType::Int32:
      return static_cast<double>(static_cast<int32_t>(v));
    default:
      return static_cast<double>(v);
  }
}

// A tensor of dtype whose element i is value(i) (which must be exact in dtype).
template <class F>
Tensor make_tensor(DType dtype, int64_t count, F value, Device device = Device::cpu()) {
  Tensor t = Tensor::empty({count}, dtype, device);
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* data = t.data<T>();
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
        data[i] = T(static_cast<float>(value(i)));
      } else {
        data[i] = static_cast<T>(value(i));
      }
    }
  });
  return t;
}

// A tensor's elements as doubles, for comparing with expected values.
inline std::vector<double> values(const Tensor& t) { return t.to_doubles(); }

}  // namespace ranks::testing
