// `ranks run --bind-to core`: which CPU each local rank gets, and binding this process for real.

#include "ranks/launch/cpu_binding.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <stdexcept>
#include <string>

namespace ranks::testing {
namespace {

TEST(CpuBinding, LocalRanksTakeTheAllowedCpusInTurn) {
  const std::vector<int> cpus = {2, 5, 7};
  const int expected[] = {2, 5, 7, 2, 5, 7, 2};
  for (int local = 0; local < 7; ++local) {
    EXPECT_EQ(launch::cpu_for_local_rank(cpus, local), expected[local]) << "local rank " << local;
  }
}

TEST(CpuBinding, NoCpusOrANegativeRankIsAnError) {
  EXPECT_THROW(launch::cpu_for_local_rank({}, 0), std::invalid_argument);
  EXPECT_THROW(launch::cpu_for_local_rank({0, 1}, -1), std::invalid_argument);
}

TEST(CpuBinding, AllowedCpusMatchTheKernelsMask) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  const std::vector<int> cpus = launch::allowed_cpus();
  ASSERT_EQ(static_cast<int>(cpus.size()), CPU_COUNT(&mask));
  for (size_t i = 0; i < cpus.size(); ++i) {
    EXPECT_TRUE(CPU_ISSET(cpus[i], &mask)) << cpus[i];
    if (i > 0) {
      EXPECT_LT(cpus[i - 1], cpus[i]);
    }
  }
}

TEST(CpuBinding, BindingThisProcessLeavesItOneCpu) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  const std::vector<int> cpus = launch::allowed_cpus();
  const int target = cpus.back();
  launch::bind_this_process_to(target);
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_EQ(CPU_COUNT(&after), 1);
  EXPECT_TRUE(CPU_ISSET(target, &after));
  ASSERT_EQ(sched_setaffinity(0, sizeof(before), &before), 0);  // the other tests run unbound
}

TEST(CpuBinding, ACpuOutOfRangeIsRefusedByName) {
  try {
    launch::bind_this_process_to(CPU_SETSIZE);
    FAIL() << "bound to CPU_SETSIZE";
  } catch (const std::runtime_error& e) {
    const std::string named = "CPU " + std::to_string(CPU_SETSIZE);
    EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ranks::testing
