// SLURM's tasks-per-node syntax ("4(x2),3"), expanded to one count per node; malformed lists
// are rejected with the input and the position in the message.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ranks/errors.hpp"
#include "ranks/launch/tasks_per_node.hpp"

namespace ranks::launch {
namespace {

using Counts = std::vector<int>;

std::string expand_error(std::string_view spec) {
  try {
    expand_tasks_per_node(spec);
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InvalidArgument for \"" << spec << "\", nothing was thrown";
  return {};
}

TEST(TasksPerNode, SingleCount) { EXPECT_EQ(expand_tasks_per_node("2"), Counts({2})); }

TEST(TasksPerNode, RepeatedCount) {
  EXPECT_EQ(expand_tasks_per_node("1(x3)"), Counts({1, 1, 1}));
  EXPECT_EQ(expand_tasks_per_node("16(x1)"), Counts({16}));
}

TEST(TasksPerNode, RunThenSingle) {
  EXPECT_EQ(expand_tasks_per_node("4(x2),3"), Counts({4, 4, 3}));
}

TEST(TasksPerNode, MixedRuns) {
  EXPECT_EQ(expand_tasks_per_node("2,3(x2),1,8(x3)"), Counts({2, 3, 3, 1, 8, 8, 8}));
}

TEST(TasksPerNode, MalformedLists) {
  EXPECT_EQ(expand_error(""),
            "invalid tasks-per-node list \"\" at position 0: unexpected end; expected a task "
            "count");
  EXPECT_EQ(expand_error("4(x2"),
            "invalid tasks-per-node list \"4(x2\" at position 4: unexpected end; expected ')'");
  EXPECT_EQ(expand_error("4(2)"),
            "invalid tasks-per-node list \"4(2)\" at position 2: unexpected '2'; expected 'x'");
  EXPECT_EQ(expand_error("4(x)"),
            "invalid tasks-per-node list \"4(x)\" at position 3: unexpected ')'; expected a "
            "repeat count");
  EXPECT_EQ(expand_error("4,"),
            "invalid tasks-per-node list \"4,\" at position 2: unexpected end; expected a task "
            "count");
  EXPECT_EQ(expand_error("4,,3"),
            "invalid tasks-per-node list \"4,,3\" at position 2: unexpected ','; expected a task "
            "count");
  EXPECT_EQ(expand_error("4 ,3"),
            "invalid tasks-per-node list \"4 ,3\" at position 1: unexpected ' '; expected ','");
  EXPECT_EQ(expand_error("4(x2)3"),
            "invalid tasks-per-node list \"4(x2)3\" at position 5: unexpected '3'; expected ','");
  EXPECT_EQ(expand_error("a"),
            "invalid tasks-per-node list \"a\" at position 0: unexpected 'a'; expected a task "
            "count");
  EXPECT_EQ(expand_error("-1"),
            "invalid tasks-per-node list \"-1\" at position 0: unexpected '-'; expected a task "
            "count");
}

TEST(TasksPerNode, ZeroCounts) {
  EXPECT_EQ(expand_error("0"),
            "invalid tasks-per-node list \"0\" at position 0: task count is 0; expected at least "
            "1");
  EXPECT_EQ(expand_error("4(x0)"),
            "invalid tasks-per-node list \"4(x0)\" at position 3: repeat count is 0; expected at "
            "least 1");
}

TEST(TasksPerNode, HugeNumbers) {
  EXPECT_EQ(expand_error("99999999999"),
            "invalid tasks-per-node list \"99999999999\" at position 0: task count is too large");
  EXPECT_EQ(expand_error("2,1(x2000000)"),
            "invalid tasks-per-node list \"2,1(x2000000)\" at position 2: lists more than "
            "1048576 nodes");
}

}  // namespace
}  // namespace ranks::launch
