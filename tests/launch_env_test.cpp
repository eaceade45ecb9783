// Launcher detection from a fake environment: infer_launcher's precedence, read_launch for
// pytorch, slurm and mpi with full and minimal variable sets, every validation error, SLURM's
// tasks-per-node list and the port derived from the job id. Expected values are written out.

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ranks/errors.hpp"
#include "ranks/launch/launcher.hpp"
#include "ranks/launch/slurm_port.hpp"

namespace ranks::launch {
namespace {

using Hosts = std::vector<std::string>;

std::string read_error(std::string_view launcher, const Env::Map& vars) {
  try {
    read_launch(launcher, Env(vars));
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InvalidArgument, nothing was thrown";
  return {};
}

// ---- Env --------------------------------------------------------------------------------------

TEST(Env, MapLookups) {
  Env env({{"A", "1"}, {"EMPTY", ""}});
  EXPECT_EQ(env.get("A"), "1");
  EXPECT_EQ(env.get("EMPTY"), "");  // set to "" is still set
  EXPECT_TRUE(env.has("EMPTY"));
  EXPECT_EQ(env.get("B"), std::nullopt);
  EXPECT_FALSE(env.has("B"));
  EXPECT_FALSE(Env().has("A"));
}

TEST(Env, SetAddsAndReplacesInThisEnvOnly) {
  Env env({{"A", "1"}});
  env.set("A", "2");
  env.set("RANKS_LAUNCH_TEST_SET_ONLY_HERE", "3");
  EXPECT_EQ(env.get("A"), "2");
  EXPECT_EQ(env.get("RANKS_LAUNCH_TEST_SET_ONLY_HERE"), "3");
  EXPECT_EQ(std::getenv("RANKS_LAUNCH_TEST_SET_ONLY_HERE"), nullptr);
}

TEST(Env, ProcessSnapshotMatchesGetenv) {
  const char* path = std::getenv("PATH");
  ASSERT_NE(path, nullptr) << "the test needs PATH to be set";
  Env env = Env::process();
  EXPECT_EQ(env.get("PATH"), std::string(path));
  EXPECT_EQ(env.get("RANKS_LAUNCH_TEST_NEVER_SET"), std::nullopt);
}

// ---- infer_launcher ---------------------------------------------------------------------------

TEST(InferLauncher, NothingSetIsNone) { EXPECT_EQ(infer_launcher(Env()), "none"); }

TEST(InferLauncher, EachLauncherAlone) {
  EXPECT_EQ(infer_launcher(Env({{"WORLD_SIZE", "2"}})), "pytorch");
  EXPECT_EQ(infer_launcher(Env({{"SLURM_NTASKS", "2"}})), "slurm");
  EXPECT_EQ(infer_launcher(Env({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}})), "mpi");
  EXPECT_EQ(infer_launcher(Env({{"PMI_RANK", "0"}})), "mpi");
  EXPECT_EQ(infer_launcher(Env({{"PMI_SIZE", "2"}})), "mpi");
}

TEST(InferLauncher, PresenceOnlyNotValue) {
  EXPECT_EQ(infer_launcher(Env({{"WORLD_SIZE", ""}})), "pytorch");
  EXPECT_EQ(infer_launcher(Env({{"SLURM_NTASKS", "garbage"}})), "slurm");
}

TEST(InferLauncher, OtherVariablesDoNotCount) {
  // MMEngine looks only at these keys: RANK, SLURM_PROCID or OMPI_COMM_WORLD_RANK alone say none.
  EXPECT_EQ(infer_launcher(Env({{"RANK", "0"}, {"MASTER_ADDR", "h"}})), "none");
  EXPECT_EQ(infer_launcher(Env({{"SLURM_PROCID", "0"}, {"SLURM_JOB_ID", "7"}})), "none");
  EXPECT_EQ(infer_launcher(Env({{"OMPI_COMM_WORLD_RANK", "0"}})), "none");
}

TEST(InferLauncher, Precedence) {
  // torchrun inside a SLURM allocation, under mpirun too: pytorch.
  EXPECT_EQ(infer_launcher(Env({{"WORLD_SIZE", "4"},
                                {"SLURM_NTASKS", "1"},
                                {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                {"PMI_RANK", "0"}})),
            "pytorch");
  EXPECT_EQ(infer_launcher(Env({{"SLURM_NTASKS", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}})),
            "slurm");
  EXPECT_EQ(infer_launcher(Env({{"SLURM_NTASKS", "2"}, {"PMI_RANK", "0"}})), "slurm");
  EXPECT_EQ(infer_launcher(Env({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"PMI_RANK", "0"}})), "mpi");
}

// ---- read_launch: dispatch --------------------------------------------------------------------

TEST(ReadLaunch, UnknownLauncherListsTheValidOnes) {
  const std::string tail =
      "; expected pytorch, slurm or mpi (\"none\" means the process was not started by a "
      "launcher, so there is nothing to read)";
  EXPECT_EQ(read_error("torchrun", {}), "unknown launcher \"torchrun\"" + tail);
  EXPECT_EQ(read_error("none", {}), "unknown launcher \"none\"" + tail);
  EXPECT_EQ(read_error("", {}), "unknown launcher \"\"" + tail);
  EXPECT_EQ(read_error("PyTorch", {{"RANK", "0"}, {"WORLD_SIZE", "1"}}),
            "unknown launcher \"PyTorch\"" + tail);
}

TEST(ReadLaunch, InferredLauncherReadsItsOwnVariables) {
  Env env({{"WORLD_SIZE", "2"},
           {"RANK", "1"},
           {"MASTER_ADDR", "h"},
           {"SLURM_NTASKS", "9"},
           {"SLURM_PROCID", "7"}});
  LaunchInfo info = read_launch(infer_launcher(env), env);
  EXPECT_EQ(info.launcher, "pytorch");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
}

// ---- pytorch ----------------------------------------------------------------------------------

TEST(Pytorch, FullVariableSet) {
  LaunchInfo info = read_launch("pytorch", Env({{"RANK", "3"},
                                                {"WORLD_SIZE", "8"},
                                                {"LOCAL_RANK", "1"},
                                                {"LOCAL_WORLD_SIZE", "2"},
                                                {"MASTER_ADDR", "node7"},
                                                {"MASTER_PORT", "29600"}}));
  EXPECT_EQ(info.launcher, "pytorch");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 2);
  EXPECT_EQ(info.master_addr, "node7");
  EXPECT_EQ(info.master_port, 29600);
  EXPECT_EQ(info.master_origin, "MASTER_ADDR=node7, MASTER_PORT=29600");
  EXPECT_EQ(info.hosts, Hosts());
}

TEST(Pytorch, MinimalVariableSet) {
  LaunchInfo info = read_launch(
      "pytorch", Env({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"}}));
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_rank, std::nullopt);
  EXPECT_EQ(info.local_size, std::nullopt);
  EXPECT_EQ(info.master_addr, "127.0.0.1");
  EXPECT_EQ(info.master_port, 29500);
  EXPECT_EQ(info.master_origin, "MASTER_ADDR=127.0.0.1, MASTER_PORT unset (default 29500)");
}

TEST(Pytorch, LocalRankWithoutLocalSize) {
  LaunchInfo info = read_launch(
      "pytorch",
      Env({{"RANK", "5"}, {"WORLD_SIZE", "6"}, {"LOCAL_RANK", "5"}, {"MASTER_ADDR", "h"}}));
  EXPECT_EQ(info.local_rank, 5);
  EXPECT_EQ(info.local_size, std::nullopt);
}

TEST(Pytorch, PortBounds) {
  Env::Map vars = {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "h"}};
  vars["MASTER_PORT"] = "1";
  EXPECT_EQ(read_launch("pytorch", Env(vars)).master_port, 1);
  vars["MASTER_PORT"] = "65535";
  EXPECT_EQ(read_launch("pytorch", Env(vars)).master_port, 65535);
}

TEST(Pytorch, MissingVariables) {
  EXPECT_EQ(read_error("pytorch", {{"RANK", "0"}, {"MASTER_ADDR", "h"}}),
            "pytorch launcher: WORLD_SIZE is not set; start the program with torchrun or `ranks "
            "run`");
  EXPECT_EQ(read_error("pytorch", {{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}),
            "pytorch launcher: RANK is not set; start the program with torchrun or `ranks run`");
  EXPECT_EQ(read_error("pytorch", {{"RANK", "0"}, {"WORLD_SIZE", "2"}}),
            "pytorch launcher: MASTER_ADDR is not set; expected the host name or address of the "
            "machine running rank 0 (on a single machine, MASTER_ADDR=127.0.0.1)");
}

TEST(Pytorch, EmptyMasterAddr) {
  EXPECT_EQ(read_error("pytorch", {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", ""}}),
            "pytorch launcher: MASTER_ADDR is set but empty");
}

TEST(Pytorch, IntegersMustParseFully) {
  auto error_for_rank = [](const std::string& rank) {
    return read_error("pytorch", {{"RANK", rank}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}});
  };
  for (std::string bad : {"1x", "", " 1", "1 ", "+1", "0x1", "1.0", "one", "--1"}) {
    EXPECT_EQ(error_for_rank(bad), "pytorch launcher: RANK='" + bad +
                                       "' is not a whole number; expected decimal digits such as 0")
        << "RANK='" << bad << "'";
  }
}

TEST(Pytorch, NumbersTooLarge) {
  EXPECT_EQ(
      read_error("pytorch", {{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}, {"MASTER_ADDR", "h"}}),
      "pytorch launcher: WORLD_SIZE=99999999999 is out of range; expected a number that "
      "fits in an int");
  EXPECT_EQ(
      read_error("pytorch",
                 {{"RANK", "0"}, {"WORLD_SIZE", "99999999999999999999"}, {"MASTER_ADDR", "h"}}),
      "pytorch launcher: WORLD_SIZE='99999999999999999999' is out of range; expected a "
      "smaller whole number");
}

TEST(Pytorch, WorldSizeMustBePositive) {
  EXPECT_EQ(read_error("pytorch", {{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"MASTER_ADDR", "h"}}),
            "pytorch launcher: WORLD_SIZE=0 is out of range; expected a positive number of "
            "processes");
  EXPECT_EQ(read_error("pytorch", {{"RANK", "0"}, {"WORLD_SIZE", "-2"}, {"MASTER_ADDR", "h"}}),
            "pytorch launcher: WORLD_SIZE=-2 is out of range; expected a positive number of "
            "processes");
}

TEST(Pytorch, RankMustBeBelowWorldSize) {
  EXPECT_EQ(read_error("pytorch", {{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}}),
            "pytorch launcher: RANK=4 is out of range; expected 0 <= RANK < 4 (WORLD_SIZE)");
  EXPECT_EQ(read_error("pytorch", {{"RANK", "-1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}}),
            "pytorch launcher: RANK=-1 is out of range; expected 0 <= RANK < 4 (WORLD_SIZE)");
}

TEST(Pytorch, LocalSizeMustFitTheWorld) {
  Env::Map vars = {{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}};
  vars["LOCAL_WORLD_SIZE"] = "5";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: LOCAL_WORLD_SIZE=5 is out of range; expected 1 <= "
            "LOCAL_WORLD_SIZE <= 4 (WORLD_SIZE)");
  vars["LOCAL_WORLD_SIZE"] = "0";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: LOCAL_WORLD_SIZE=0 is out of range; expected 1 <= "
            "LOCAL_WORLD_SIZE <= 4 (WORLD_SIZE)");
  vars["LOCAL_WORLD_SIZE"] = "2x";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: LOCAL_WORLD_SIZE='2x' is not a whole number; expected decimal "
            "digits such as 0");
}

TEST(Pytorch, LocalRankMustBeBelowLocalSize) {
  Env::Map vars = {{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}};
  vars["LOCAL_WORLD_SIZE"] = "2";
  vars["LOCAL_RANK"] = "2";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: LOCAL_RANK=2 is out of range; expected 0 <= LOCAL_RANK < 2 "
            "(LOCAL_WORLD_SIZE)");
  vars["LOCAL_RANK"] = "-1";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: LOCAL_RANK=-1 is out of range; expected 0 <= LOCAL_RANK < 2 "
            "(LOCAL_WORLD_SIZE)");
  vars.erase("LOCAL_WORLD_SIZE");
  vars["LOCAL_RANK"] = "4";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: LOCAL_RANK=4 is out of range; expected 0 <= LOCAL_RANK < 4 "
            "(WORLD_SIZE)");
}

TEST(Pytorch, PortMustBeValid) {
  Env::Map vars = {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "h"}};
  vars["MASTER_PORT"] = "0";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: MASTER_PORT=0 is out of range; expected a port in 1..65535");
  vars["MASTER_PORT"] = "65536";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: MASTER_PORT=65536 is out of range; expected a port in 1..65535");
  vars["MASTER_PORT"] = "-80";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: MASTER_PORT=-80 is out of range; expected a port in 1..65535");
  vars["MASTER_PORT"] = "http";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: MASTER_PORT='http' is not a whole number; expected decimal digits "
            "such as 0");
}

// ---- slurm ------------------------------------------------------------------------------------

const std::string kSrun = "start each rank with srun (the batch script itself is not a rank)";

TEST(Slurm, FullVariableSet) {
  LaunchInfo info = read_launch("slurm", Env({{"SLURM_PROCID", "5"},
                                              {"SLURM_NTASKS", "8"},
                                              {"SLURM_LOCALID", "1"},
                                              {"SLURM_NODEID", "1"},
                                              {"SLURM_STEP_NODELIST", "gpu[01-02]"},
                                              {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
                                              {"SLURM_JOB_ID", "123456"}}));
  EXPECT_EQ(info.launcher, "slurm");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 4);
  EXPECT_EQ(info.hosts, Hosts({"gpu01", "gpu02"}));
  EXPECT_EQ(info.master_addr, "gpu01");
  EXPECT_EQ(info.master_port, 15456);  // 12000 + 123456 % 20000
  EXPECT_EQ(info.master_origin,
            "the first host of SLURM_STEP_NODELIST='gpu[01-02]', port 15456 derived from "
            "SLURM_JOB_ID=123456 (set MASTER_PORT to override)");
}

TEST(Slurm, MinimalVariableSet) {
  LaunchInfo info = read_launch(
      "slurm", Env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_NODELIST", "node1"}}));
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_rank, std::nullopt);
  EXPECT_EQ(info.local_size, std::nullopt);
  EXPECT_EQ(info.hosts, Hosts({"node1"}));
  EXPECT_EQ(info.master_addr, "node1");
  EXPECT_EQ(info.master_port, 29500);
  EXPECT_EQ(info.master_origin,
            "the first host of SLURM_NODELIST='node1', MASTER_PORT and SLURM_JOB_ID unset "
            "(default 29500)");
}

TEST(Slurm, MasterVariablesWinOverTheNodeListAndJobId) {
  LaunchInfo info = read_launch("slurm", Env({{"SLURM_PROCID", "0"},
                                              {"SLURM_NTASKS", "2"},
                                              {"SLURM_NODELIST", "n[1-2]"},
                                              {"SLURM_JOB_ID", "77"},
                                              {"MASTER_ADDR", "10.0.0.5"},
                                              {"MASTER_PORT", "23456"}}));
  EXPECT_EQ(info.master_addr, "10.0.0.5");
  EXPECT_EQ(info.master_port, 23456);
  EXPECT_EQ(info.hosts, Hosts({"n1", "n2"}));  // still read
  EXPECT_EQ(info.master_origin, "MASTER_ADDR=10.0.0.5, MASTER_PORT=23456");
}

TEST(Slurm, MasterAddrWithoutNodeList) {
  LaunchInfo info = read_launch(
      "slurm", Env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "head"}}));
  EXPECT_EQ(info.master_addr, "head");
  EXPECT_EQ(info.hosts, Hosts());
}

TEST(Slurm, NodeListPrecedence) {
  Env::Map vars = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}};
  vars["SLURM_JOB_NODELIST"] = "job[1-4]";
  EXPECT_EQ(read_launch("slurm", Env(vars)).hosts, Hosts({"job1", "job2", "job3", "job4"}));
  vars["SLURM_NODELIST"] = "old[1-3]";
  EXPECT_EQ(read_launch("slurm", Env(vars)).hosts, Hosts({"old1", "old2", "old3"}));
  vars["SLURM_STEP_NODELIST"] = "step[3-4]";
  LaunchInfo info = read_launch("slurm", Env(vars));
  EXPECT_EQ(info.hosts, Hosts({"step3", "step4"}));
  EXPECT_EQ(info.master_addr, "step3");
}

TEST(Slurm, UnevenTasksPerNodeUsesTheNodeId) {
  Env::Map vars = {{"SLURM_PROCID", "8"},
                   {"SLURM_NTASKS", "11"},
                   {"SLURM_LOCALID", "0"},
                   {"SLURM_NODELIST", "n[1-3]"},
                   {"SLURM_TASKS_PER_NODE", "4(x2),3"}};
  vars["SLURM_NODEID"] = "2";
  EXPECT_EQ(read_launch("slurm", Env(vars)).local_size, 3);
  vars["SLURM_NODEID"] = "1";
  EXPECT_EQ(read_launch("slurm", Env(vars)).local_size, 4);
  vars["SLURM_NODEID"] = "0";
  EXPECT_EQ(read_launch("slurm", Env(vars)).local_size, 4);
}

TEST(Slurm, UnevenTasksPerNodeWithoutNodeIdLeavesLocalSizeEmpty) {
  LaunchInfo info = read_launch("slurm", Env({{"SLURM_PROCID", "0"},
                                              {"SLURM_NTASKS", "5"},
                                              {"SLURM_NODELIST", "n[1-2]"},
                                              {"SLURM_TASKS_PER_NODE", "3,2"}}));
  EXPECT_EQ(info.local_size, std::nullopt);
}

TEST(Slurm, EvenTasksPerNodeWithoutNodeId) {
  LaunchInfo info = read_launch("slurm", Env({{"SLURM_PROCID", "0"},
                                              {"SLURM_NTASKS", "6"},
                                              {"SLURM_NODELIST", "n[1-3]"},
                                              {"SLURM_TASKS_PER_NODE", "2(x3)"}}));
  EXPECT_EQ(info.local_size, 2);
}

TEST(Slurm, StepTasksPerNodeWinsOverTheJobs) {
  LaunchInfo info = read_launch("slurm", Env({{"SLURM_PROCID", "0"},
                                              {"SLURM_NTASKS", "2"},
                                              {"SLURM_NODEID", "0"},
                                              {"SLURM_NODELIST", "n1"},
                                              {"SLURM_TASKS_PER_NODE", "8"},
                                              {"SLURM_STEP_TASKS_PER_NODE", "2"}}));
  EXPECT_EQ(info.local_size, 2);
}

TEST(Slurm, NtasksPerNodeAloneIsNotTrusted) {
  // With --ntasks it is only a maximum per node; the runtime counts ranks per host instead.
  LaunchInfo info = read_launch("slurm", Env({{"SLURM_PROCID", "0"},
                                              {"SLURM_NTASKS", "6"},
                                              {"SLURM_NODELIST", "n[1-2]"},
                                              {"SLURM_NTASKS_PER_NODE", "4"}}));
  EXPECT_EQ(info.local_size, std::nullopt);
}

TEST(Slurm, MasterPortMakesTheJobIdIrrelevant) {
  LaunchInfo info = read_launch("slurm", Env({{"SLURM_PROCID", "0"},
                                              {"SLURM_NTASKS", "1"},
                                              {"SLURM_NODELIST", "n1"},
                                              {"SLURM_JOB_ID", "not-a-number"},
                                              {"MASTER_PORT", "4000"}}));
  EXPECT_EQ(info.master_port, 4000);
}

TEST(Slurm, JobIdAlias) {
  LaunchInfo info = read_launch("slurm", Env({{"SLURM_PROCID", "0"},
                                              {"SLURM_NTASKS", "1"},
                                              {"SLURM_NODELIST", "n1"},
                                              {"SLURM_JOBID", "20001"}}));
  EXPECT_EQ(info.master_port, 12001);
  EXPECT_EQ(info.master_origin,
            "the first host of SLURM_NODELIST='n1', port 12001 derived from SLURM_JOBID=20001 "
            "(set MASTER_PORT to override)");
}

TEST(Slurm, JobPortIsDeterministicInRangeAndSeparatesJobs) {
  EXPECT_EQ(slurm_job_port(0), 12000);
  EXPECT_EQ(slurm_job_port(1), 12001);
  EXPECT_EQ(slurm_job_port(19999), 31999);
  EXPECT_EQ(slurm_job_port(20000), 12000);
  EXPECT_EQ(slurm_job_port(123456), 15456);
  EXPECT_EQ(slurm_job_port(18446744073709551615u), 23615);  // 2^64 - 1 = ...51615
  // The same job id on every rank gives the same port.
  Env::Map vars = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "n1"}};
  vars["SLURM_JOB_ID"] = "4242";
  int first = read_launch("slurm", Env(vars)).master_port;
  vars["SLURM_PROCID"] = "1";
  EXPECT_EQ(read_launch("slurm", Env(vars)).master_port, first);
  EXPECT_EQ(first, 16242);
  vars["SLURM_JOB_ID"] = "4243";
  EXPECT_EQ(read_launch("slurm", Env(vars)).master_port, 16243);
  // Any 20000 consecutive job ids get 20000 different ports, all in 12000..31999.
  std::set<int> ports;
  for (uint64_t job = 987654; job < 987654 + 20000; ++job) {
    int port = slurm_job_port(job);
    ASSERT_GE(port, 12000);
    ASSERT_LE(port, 31999);
    ports.insert(port);
  }
  EXPECT_EQ(ports.size(), 20000u);
}

TEST(Slurm, MissingVariables) {
  EXPECT_EQ(read_error("slurm", {{"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "n1"}}),
            "slurm launcher: SLURM_PROCID is not set; " + kSrun);
  EXPECT_EQ(read_error("slurm", {{"SLURM_PROCID", "0"}, {"SLURM_NODELIST", "n1"}}),
            "slurm launcher: SLURM_NTASKS is not set; " + kSrun);
  EXPECT_EQ(read_error("slurm", {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}),
            "slurm launcher: neither MASTER_ADDR nor SLURM_STEP_NODELIST, SLURM_NODELIST or "
            "SLURM_JOB_NODELIST is set; expected srun to export the node list, or MASTER_ADDR "
            "naming rank 0's host");
}

TEST(Slurm, RankChecks) {
  EXPECT_EQ(
      read_error("slurm", {{"SLURM_PROCID", "8"}, {"SLURM_NTASKS", "8"}, {"SLURM_NODELIST", "n1"}}),
      "slurm launcher: SLURM_PROCID=8 is out of range; expected 0 <= SLURM_PROCID < 8 "
      "(SLURM_NTASKS)");
  EXPECT_EQ(
      read_error("slurm", {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "0"}, {"SLURM_NODELIST", "n1"}}),
      "slurm launcher: SLURM_NTASKS=0 is out of range; expected a positive number of "
      "processes");
  EXPECT_EQ(read_error("slurm", {{"SLURM_PROCID", "0"},
                                 {"SLURM_NTASKS", "8"},
                                 {"SLURM_LOCALID", "8"},
                                 {"SLURM_NODELIST", "n1"}}),
            "slurm launcher: SLURM_LOCALID=8 is out of range; expected 0 <= SLURM_LOCALID < 8 "
            "(SLURM_NTASKS)");
  EXPECT_EQ(read_error("slurm", {{"SLURM_PROCID", "0"},
                                 {"SLURM_NTASKS", "8"},
                                 {"SLURM_LOCALID", "x"},
                                 {"SLURM_NODELIST", "n1"}}),
            "slurm launcher: SLURM_LOCALID='x' is not a whole number; expected decimal digits "
            "such as 0");
}

TEST(Slurm, LocalIdMustBeBelowThisNodesTaskCount) {
  EXPECT_EQ(read_error("slurm", {{"SLURM_PROCID", "4"},
                                 {"SLURM_NTASKS", "8"},
                                 {"SLURM_LOCALID", "4"},
                                 {"SLURM_NODEID", "1"},
                                 {"SLURM_NODELIST", "n[1-2]"},
                                 {"SLURM_TASKS_PER_NODE", "4(x2)"}}),
            "slurm launcher: SLURM_LOCALID=4 is out of range; expected 0 <= SLURM_LOCALID < 4 "
            "(this node's entry of the tasks-per-node list)");
}

TEST(Slurm, NodeIdMustIndexTheTasksPerNodeList) {
  Env::Map vars = {{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "11"},
                   {"SLURM_NODELIST", "n[1-3]"},
                   {"SLURM_TASKS_PER_NODE", "4(x2),3"}};
  vars["SLURM_NODEID"] = "3";
  EXPECT_EQ(read_error("slurm", vars),
            "slurm launcher: SLURM_NODEID=3 is out of range; expected 0 <= SLURM_NODEID < 3 (the "
            "number of nodes in SLURM_TASKS_PER_NODE='4(x2),3')");
  vars["SLURM_NODEID"] = "-1";
  EXPECT_EQ(read_error("slurm", vars),
            "slurm launcher: SLURM_NODEID=-1 is out of range; expected 0 <= SLURM_NODEID < 3 "
            "(the number of nodes in SLURM_TASKS_PER_NODE='4(x2),3')");
}

TEST(Slurm, TaskCountLargerThanTheJob) {
  EXPECT_EQ(read_error("slurm", {{"SLURM_PROCID", "0"},
                                 {"SLURM_NTASKS", "2"},
                                 {"SLURM_NODELIST", "n1"},
                                 {"SLURM_TASKS_PER_NODE", "4"}}),
            "slurm launcher: this node's tasks-per-node entry 4 exceeds SLURM_NTASKS=2");
}

TEST(Slurm, MalformedLists) {
  EXPECT_EQ(read_error("slurm",
                       {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "n[1-"}}),
            "slurm launcher: SLURM_NODELIST is not a valid host list: invalid host list \"n[1-\" "
            "at position 1: '[' is never closed");
  EXPECT_EQ(
      read_error("slurm", {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", ""}}),
      "slurm launcher: SLURM_NODELIST is set but empty");
  EXPECT_EQ(read_error("slurm", {{"SLURM_PROCID", "0"},
                                 {"SLURM_NTASKS", "2"},
                                 {"SLURM_NODELIST", "n1"},
                                 {"SLURM_STEP_TASKS_PER_NODE", "4(x2"}}),
            "slurm launcher: SLURM_STEP_TASKS_PER_NODE is not a valid tasks-per-node list: "
            "invalid tasks-per-node list \"4(x2\" at position 4: unexpected end; expected ')'");
}

TEST(Slurm, PortChecks) {
  Env::Map vars = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_NODELIST", "n1"}};
  vars["SLURM_JOB_ID"] = "-1";
  EXPECT_EQ(read_error("slurm", vars),
            "slurm launcher: SLURM_JOB_ID=-1 is out of range; expected a job id >= 0");
  vars["SLURM_JOB_ID"] = "12a";
  EXPECT_EQ(read_error("slurm", vars),
            "slurm launcher: SLURM_JOB_ID='12a' is not a whole number; expected decimal digits "
            "such as 0");
  vars["SLURM_JOB_ID"] = "";
  EXPECT_EQ(read_error("slurm", vars), "slurm launcher: SLURM_JOB_ID is set but empty");
  vars["SLURM_JOB_ID"] = "5";
  vars["MASTER_PORT"] = "70000";
  EXPECT_EQ(read_error("slurm", vars),
            "slurm launcher: MASTER_PORT=70000 is out of range; expected a port in 1..65535");
}

// ---- mpi --------------------------------------------------------------------------------------

TEST(Mpi, OpenMpiFullVariableSet) {
  LaunchInfo info = read_launch("mpi", Env({{"OMPI_COMM_WORLD_RANK", "2"},
                                            {"OMPI_COMM_WORLD_SIZE", "4"},
                                            {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                            {"MASTER_ADDR", "host0"},
                                            {"MASTER_PORT", "1234"}}));
  EXPECT_EQ(info.launcher, "mpi");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_size, 2);
  EXPECT_EQ(info.master_addr, "host0");
  EXPECT_EQ(info.master_port, 1234);
  EXPECT_EQ(info.hosts, Hosts());
}

TEST(Mpi, OpenMpiMinimalVariableSet) {
  LaunchInfo info = read_launch("mpi", Env({{"OMPI_COMM_WORLD_RANK", "1"},
                                            {"OMPI_COMM_WORLD_SIZE", "2"},
                                            {"MASTER_ADDR", "host0"}}));
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
  EXPECT_EQ(info.local_rank, std::nullopt);
  EXPECT_EQ(info.local_size, std::nullopt);
  EXPECT_EQ(info.master_port, 29500);
  EXPECT_EQ(info.master_origin, "MASTER_ADDR=host0, MASTER_PORT unset (default 29500)");
}

TEST(Mpi, MpichFullVariableSet) {
  LaunchInfo info = read_launch("mpi", Env({{"PMI_RANK", "1"},
                                            {"PMI_SIZE", "3"},
                                            {"MPI_LOCALRANKID", "1"},
                                            {"MPI_LOCALNRANKS", "3"},
                                            {"MASTER_ADDR", "h"},
                                            {"MASTER_PORT", "4321"}}));
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 3);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 3);
  EXPECT_EQ(info.master_port, 4321);
}

TEST(Mpi, MpichMinimalVariableSet) {
  LaunchInfo info =
      read_launch("mpi", Env({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MASTER_ADDR", "h"}}));
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 2);
  EXPECT_EQ(info.local_rank, std::nullopt);
  EXPECT_EQ(info.local_size, std::nullopt);
  EXPECT_EQ(info.master_port, 29500);
}

TEST(Mpi, OpenMpiWinsOverPmi) {
  LaunchInfo info = read_launch("mpi", Env({{"OMPI_COMM_WORLD_RANK", "1"},
                                            {"OMPI_COMM_WORLD_SIZE", "2"},
                                            {"PMI_RANK", "0"},
                                            {"PMI_SIZE", "5"},
                                            {"MASTER_ADDR", "h"}}));
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
}

TEST(Mpi, AnyOpenMpiVariableSelectsOpenMpi) {
  EXPECT_EQ(read_error("mpi", {{"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                               {"PMI_RANK", "0"},
                               {"PMI_SIZE", "2"},
                               {"MASTER_ADDR", "h"}}),
            "mpi launcher: OMPI_COMM_WORLD_SIZE is not set; start the program with mpirun");
  EXPECT_EQ(read_error("mpi", {{"OMPI_COMM_WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}),
            "mpi launcher: OMPI_COMM_WORLD_RANK is not set; start the program with mpirun");
}

TEST(Mpi, PmiSizeAloneSelectsMpich) {
  EXPECT_EQ(read_error("mpi", {{"PMI_SIZE", "2"}, {"MASTER_ADDR", "h"}}),
            "mpi launcher: PMI_RANK is not set; start the program with mpirun");
}

TEST(Mpi, NoRankVariables) {
  EXPECT_EQ(read_error("mpi", {{"MASTER_ADDR", "h"}, {"RANK", "0"}, {"WORLD_SIZE", "1"}}),
            "mpi launcher: neither OMPI_COMM_WORLD_RANK (Open MPI) nor PMI_RANK (MPICH, Intel "
            "MPI) is set; start the program with mpirun");
}

TEST(Mpi, MasterAddrIsRequired) {
  EXPECT_EQ(read_error("mpi", {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
            "mpi launcher: MASTER_ADDR is not set; expected the host name or address of the "
            "machine running rank 0 (on a single machine, MASTER_ADDR=127.0.0.1)");
}

TEST(Mpi, RankChecks) {
  EXPECT_EQ(read_error("mpi", {{"OMPI_COMM_WORLD_RANK", "2"},
                               {"OMPI_COMM_WORLD_SIZE", "2"},
                               {"MASTER_ADDR", "h"}}),
            "mpi launcher: OMPI_COMM_WORLD_RANK=2 is out of range; expected 0 <= "
            "OMPI_COMM_WORLD_RANK < 2 (OMPI_COMM_WORLD_SIZE)");
  EXPECT_EQ(read_error("mpi", {{"OMPI_COMM_WORLD_RANK", "0"},
                               {"OMPI_COMM_WORLD_SIZE", "4"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                               {"MASTER_ADDR", "h"}}),
            "mpi launcher: OMPI_COMM_WORLD_LOCAL_RANK=2 is out of range; expected 0 <= "
            "OMPI_COMM_WORLD_LOCAL_RANK < 2 (OMPI_COMM_WORLD_LOCAL_SIZE)");
  EXPECT_EQ(
      read_error(
          "mpi",
          {{"PMI_RANK", "0"}, {"PMI_SIZE", "3"}, {"MPI_LOCALNRANKS", "0"}, {"MASTER_ADDR", "h"}}),
      "mpi launcher: MPI_LOCALNRANKS=0 is out of range; expected 1 <= MPI_LOCALNRANKS <= 3 "
      "(PMI_SIZE)");
  EXPECT_EQ(read_error("mpi", {{"PMI_RANK", "3"}, {"PMI_SIZE", "3"}, {"MASTER_ADDR", "h"}}),
            "mpi launcher: PMI_RANK=3 is out of range; expected 0 <= PMI_RANK < 3 (PMI_SIZE)");
  EXPECT_EQ(read_error("mpi", {{"PMI_RANK", "0"}, {"PMI_SIZE", "1e3"}, {"MASTER_ADDR", "h"}}),
            "mpi launcher: PMI_SIZE='1e3' is not a whole number; expected decimal digits such as "
            "0");
}

TEST(Mpi, PortChecks) {
  EXPECT_EQ(
      read_error(
          "mpi",
          {{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "99999"}}),
      "mpi launcher: MASTER_PORT=99999 is out of range; expected a port in 1..65535");
}

}  // namespace
}  // namespace ranks::launch
