#include "ranks/launch/detail/common_vars.hpp"

#include <fmt/format.h>

namespace ranks::launch::detail {

void read_rank_vars(const VarReader& vars, const RankVars& names, LaunchInfo& info) {
  info.world_size = vars.require_integer(names.world_size);
  vars.check_positive(names.world_size, info.world_size);
  info.rank = vars.require_integer(names.rank);
  vars.check_index(names.rank, info.rank, info.world_size, names.world_size);
  if (!names.local_size.empty()) {
    info.local_size = vars.integer(names.local_size);
    if (info.local_size) {
      vars.check_at_most(names.local_size, *info.local_size, info.world_size, names.world_size);
    }
  }
  info.local_rank = vars.integer(names.local_rank);
  if (info.local_rank) {
    if (info.local_size) {
      vars.check_index(names.local_rank, *info.local_rank, *info.local_size, names.local_size);
    } else {
      vars.check_index(names.local_rank, *info.local_rank, info.world_size, names.world_size);
    }
  }
}

void read_master_vars(const VarReader& vars, LaunchInfo& info) {
  std::optional<std::string> addr = vars.text("MASTER_ADDR");
  if (!addr) {
    vars.fail(
        "MASTER_ADDR is not set; expected the host name or address of the machine running rank "
        "0 (on a single machine, MASTER_ADDR=127.0.0.1)");
  }
  info.master_addr = *addr;
  std::optional<int> port = vars.port("MASTER_PORT");
  info.master_port = port.value_or(kDefaultMasterPort);
  info.master_origin =
      port ? fmt::format("MASTER_ADDR={}, MASTER_PORT={}", info.master_addr, info.master_port)
           : fmt::format("MASTER_ADDR={}, MASTER_PORT unset (default {})", info.master_addr,
                         kDefaultMasterPort);
}

}  // namespace ranks::launch::detail
