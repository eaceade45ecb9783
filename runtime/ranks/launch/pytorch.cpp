#include "ranks/launch/detail/common_vars.hpp"
#include "ranks/launch/detail/readers.hpp"

namespace ranks::launch::detail {

LaunchInfo read_pytorch(const Env& env) {
  VarReader vars(env, "pytorch", "start the program with torchrun or `ranks run`");
  LaunchInfo info;
  info.launcher = "pytorch";
  read_rank_vars(vars, {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}, info);
  read_master_vars(vars, info);
  return info;
}

}  // namespace ranks::launch::detail
