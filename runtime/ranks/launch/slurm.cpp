#include <fmt/format.h>

#include <algorithm>

#include "ranks/errors.hpp"
#include "ranks/launch/detail/common_vars.hpp"
#include "ranks/launch/detail/readers.hpp"
#include "ranks/launch/hostlist.hpp"
#include "ranks/launch/slurm_port.hpp"
#include "ranks/launch/tasks_per_node.hpp"

namespace ranks::launch::detail {

namespace {

// The step's variables come first: srun sets them for the step being run, while the job's
// (SLURM_JOB_NODELIST, or SLURM_TASKS_PER_NODE under --preserve-env) may describe a larger
// allocation; SLURM_NODEID indexes the step's nodes.
std::vector<std::string> read_hosts(const VarReader& vars, std::string& source) {
  auto list = vars.first_text({"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"});
  if (!list) return {};
  source = fmt::format("{}='{}'", list->first, list->second);
  try {
    return expand_hostlist(list->second);
  } catch (const InvalidArgument& e) {
    vars.fail(fmt::format("{} is not a valid host list: {}", list->first, e.what()));
  }
}

// This node's entry of the tasks-per-node list. Empty when there is no list, or when the list is
// uneven and SLURM_NODEID does not say which entry is ours. SLURM_NTASKS_PER_NODE is not used:
// with --ntasks it is only a maximum per node, and a wrong local size would put two ranks on
// one GPU, while leaving it empty lets the runtime count ranks per host exactly.
std::optional<int> read_local_size(const VarReader& vars) {
  auto list = vars.first_text({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  if (!list) return std::nullopt;
  std::vector<int> counts;
  try {
    counts = expand_tasks_per_node(list->second);
  } catch (const InvalidArgument& e) {
    vars.fail(fmt::format("{} is not a valid tasks-per-node list: {}", list->first, e.what()));
  }
  if (std::optional<int> node = vars.integer("SLURM_NODEID")) {
    vars.check_index("SLURM_NODEID", *node, static_cast<long long>(counts.size()),
                     fmt::format("the number of nodes in {}='{}'", list->first, list->second));
    return counts[static_cast<size_t>(*node)];
  }
  bool even = std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts[0]; });
  if (even) return counts[0];
  return std::nullopt;
}

void read_master(const VarReader& vars, const std::string& hosts_source, LaunchInfo& info) {
  std::string addr_origin;
  if (std::optional<std::string> addr = vars.text("MASTER_ADDR")) {
    info.master_addr = *addr;
    addr_origin = fmt::format("MASTER_ADDR={}", *addr);
  } else if (!info.hosts.empty()) {
    // As MMEngine's `scontrol show hostname $SLURM_NODELIST | head -n1`: srun's block
    // distribution places rank 0 on the first node.
    info.master_addr = info.hosts.front();
    addr_origin = fmt::format("the first host of {}", hosts_source);
  } else {
    vars.fail(
        "neither MASTER_ADDR nor SLURM_STEP_NODELIST, SLURM_NODELIST or SLURM_JOB_NODELIST is "
        "set; expected srun to export the node list, or MASTER_ADDR naming rank 0's host");
  }

  std::string port_origin;
  if (std::optional<int> port = vars.port("MASTER_PORT")) {
    info.master_port = *port;
    port_origin = fmt::format("MASTER_PORT={}", *port);
  } else if (auto job_var = vars.first_text({"SLURM_JOB_ID", "SLURM_JOBID"})) {
    long long job = *vars.number(job_var->first);
    if (job < 0) {
      vars.fail(fmt::format("{}={} is out of range; expected a job id >= 0", job_var->first, job));
    }
    info.master_port = slurm_job_port(static_cast<uint64_t>(job));
    port_origin = fmt::format("port {} derived from {}={} (set MASTER_PORT to override)",
                              info.master_port, job_var->first, job);
  } else {
    info.master_port = kDefaultMasterPort;
    port_origin =
        fmt::format("MASTER_PORT and SLURM_JOB_ID unset (default {})", kDefaultMasterPort);
  }
  info.master_origin = addr_origin + ", " + port_origin;
}

}  // namespace

LaunchInfo read_slurm(const Env& env) {
  VarReader vars(env, "slurm", "start each rank with srun (the batch script itself is not a rank)");
  LaunchInfo info;
  info.launcher = "slurm";
  read_rank_vars(vars, {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", ""}, info);
  std::string hosts_source;
  info.hosts = read_hosts(vars, hosts_source);
  info.local_size = read_local_size(vars);
  if (info.local_size) {
    if (*info.local_size > info.world_size) {
      vars.fail(fmt::format("this node's tasks-per-node entry {} exceeds SLURM_NTASKS={}",
                            *info.local_size, info.world_size));
    }
    if (info.local_rank) {
      vars.check_index("SLURM_LOCALID", *info.local_rank, *info.local_size,
                       "this node's entry of the tasks-per-node list");
    }
  }
  read_master(vars, hosts_source, info);
  return info;
}

}  // namespace ranks::launch::detail
