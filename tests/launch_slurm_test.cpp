// SLURM's variables from a fake environment: full and minimal sets, the master address from the
// node list, the tasks-per-node list, the port derived from the job id, every validation error.
// Expected values are written out.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "invalid_argument.hpp"
#include "ranks/errors.hpp"
#include "ranks/launch/launcher.hpp"
#include "ranks/launch/slurm_port.hpp"

namespace ranks::launch {
namespace {

using Hosts = std::vector<std::string>;
// The message of reading vars as `launcher` (InvalidArgument expected).
std::string read_error(std::string_view launcher, const Env::Map& vars) {
  return ranks::testing::invalid_argument([&] { read_launch(launcher, Env(vars)); });
}

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

}  // namespace
}  // namespace ranks::launch
