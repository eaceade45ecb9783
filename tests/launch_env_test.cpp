// Launcher detection from a fake environment: infer_launcher's precedence, read_launch for
// pytorch and mpi with full and minimal variable sets and every validation error (SLURM's:
// launch_slurm_test.cpp). Expected values are written out.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "invalid_argument.hpp"
#include "ranks/errors.hpp"
#include "ranks/launch/launcher.hpp"

namespace ranks::launch {
namespace {

using Hosts = std::vector<std::string>;
// The message of reading vars as `launcher` (InvalidArgument expected).
std::string read_error(std::string_view launcher, const Env::Map& vars) {
  return ranks::testing::invalid_argument([&] { read_launch(launcher, Env(vars)); });
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

// ranks::main trusts mpirun over the SLURM allocation it runs in and over a stray WORLD_SIZE,
// and torchrun's complete set over both.
TEST(LauncherForMain, MpirunInsideAnAllocationIsMpi) {
  const Env salloc({{"SLURM_NTASKS", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  EXPECT_EQ(infer_launcher(salloc), "slurm");  // MMEngine's order, unchanged
  EXPECT_EQ(launcher_for_main(salloc), "mpi");
  EXPECT_EQ(
      launcher_for_main(
          Env({{"SLURM_NTASKS", "3"}, {"SLURM_PROCID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}})),
      "mpi");
  EXPECT_EQ(launcher_for_main(Env({{"WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}})),
            "mpi");
  EXPECT_EQ(launcher_for_main(Env({{"WORLD_SIZE", "8"},
                                   {"RANK", "3"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                   {"SLURM_NTASKS", "3"}})),
            "pytorch");
  EXPECT_EQ(launcher_for_main(Env({{"SLURM_NTASKS", "3"}})), "slurm");
  EXPECT_EQ(launcher_for_main(Env({{"WORLD_SIZE", "8"}})), "pytorch");  // then: RANK is not set
  EXPECT_EQ(launcher_for_main(Env()), "none");
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

TEST(Pytorch, TorchrunsAgentStoreGivesTheAttemptsPrefix) {
  Env::Map vars = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}};
  EXPECT_EQ(read_launch("pytorch", Env(vars)).agent_store_prefix, "");
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";  // --standalone: rank 0 hosts the store
  EXPECT_EQ(read_launch("pytorch", Env(vars)).agent_store_prefix, "");
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  EXPECT_EQ(read_launch("pytorch", Env(vars)).agent_store_prefix, "/worker/attempt_0");
  vars["TORCHELASTIC_RESTART_COUNT"] = "2";
  EXPECT_EQ(read_launch("pytorch", Env(vars)).agent_store_prefix, "/worker/attempt_2");
  vars["TORCHELASTIC_RESTART_COUNT"] = "-1";
  EXPECT_EQ(read_error("pytorch", vars),
            "pytorch launcher: TORCHELASTIC_RESTART_COUNT=-1 is negative");
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
            "mpi launcher: MASTER_ADDR is not set: under mpirun, RANKS_BACKEND=mpi (mpirun -x "
            "RANKS_BACKEND=mpi) needs none; gloo and nccl need the host of rank 0 "
            "(MASTER_ADDR=127.0.0.1 on one machine, passed with mpirun -x)");
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
