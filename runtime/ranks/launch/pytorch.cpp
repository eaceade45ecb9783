#include "ranks/launch/detail/common_vars.hpp"
#include "ranks/launch/detail/readers.hpp"

#include <string>

namespace ranks::launch::detail {

LaunchInfo read_pytorch(const Env& env) {
  VarReader vars(env, "pytorch", "start the program with torchrun or `ranks run`");
  LaunchInfo info;
  info.launcher = "pytorch";
  read_rank_vars(vars, {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}, info);
  read_master_vars(vars, info);
  // torchrun's agent already listens at MASTER_PORT and serves its workers from there.
  if (vars.text("TORCHELASTIC_USE_AGENT_STORE") == "True") {
    const int attempt = vars.integer("TORCHELASTIC_RESTART_COUNT").value_or(0);
    if (attempt < 0) {
      vars.fail("TORCHELASTIC_RESTART_COUNT=" + std::to_string(attempt) + " is negative");
    }
    info.agent_store_prefix = "/worker/attempt_" + std::to_string(attempt);
  }
  return info;
}

}  // namespace ranks::launch::detail
