#pragma once
// Initialisation and the query functions, with MMEngine's names and non-distributed fallbacks.

#include <chrono>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ranks/group.hpp"
#include "ranks/store.hpp"

namespace ranks {

struct InitOptions {
  std::string backend;                 // "nccl" | "gloo" | "mpi"; empty = nccl if a GPU, else gloo
  std::string init_method = "env://";  // env:// | tcp://host:port | file:///path
  int world_size = -1;
  int rank = -1;
  std::shared_ptr<Store> store;  // overrides init_method
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
};

void init_process_group(const InitOptions& = {});
void init_dist(std::string_view launcher,  // "pytorch" | "slurm" | "mpi"
               std::string_view backend = "nccl", InitOptions = {});
std::string infer_launcher();  // "pytorch" | "slurm" | "mpi" | "none"
void destroy_process_group();
bool is_initialized();
bool is_distributed();

int get_world_size(const Group& = {});
int get_rank(const Group& = {});
std::optional<std::string> get_backend(const Group& = {});  // nullopt when not distributed
int get_local_rank();
int get_local_size();
std::pair<int, int> get_dist_info(const Group& = {});  // (rank, world_size)
bool is_main_process(const Group& = {});

// A callable that runs f on global rank 0 only. Elsewhere it returns without running f: nothing
// for a void f, std::nullopt for an f that returns a value.
template <class F>
auto master_only(F f) {
  return [f = std::move(f)](auto&&... args) {
    using R = std::invoke_result_t<const F&, decltype(args)...>;
    if constexpr (std::is_void_v<R>) {
      if (get_rank() == 0) f(std::forward<decltype(args)>(args)...);
    } else {
      if (get_rank() != 0) return std::optional<R>{};
      return std::optional<R>{f(std::forward<decltype(args)>(args)...)};
    }
  };
}

void barrier(const Group& = {}, std::source_location where = std::source_location::current());
// Real runs: sleeps. Simulated: advances this rank's virtual clock.
void sleep_for(std::chrono::nanoseconds);
// Real runs: time since an arbitrary epoch. Simulated: the virtual clock.
std::chrono::nanoseconds now();

}  // namespace ranks
