// SLURM host lists expanded by our own parser: padding, several bracket groups in SLURM's order,
// whitespace, and malformed input rejected with the input and position in the message. Expected
// host names are written out by hand.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "invalid_argument.hpp"
#include "ranks/errors.hpp"
#include "ranks/launch/hostlist.hpp"

namespace ranks::launch {
namespace {

using Hosts = std::vector<std::string>;

using ranks::testing::invalid_argument;

std::string expand_error(std::string_view list) {
  return invalid_argument([&] { expand_hostlist(list); });
}

TEST(Hostlist, SingleHost) { EXPECT_EQ(expand_hostlist("node1"), Hosts({"node1"})); }

TEST(Hostlist, HostWithoutDigits) { EXPECT_EQ(expand_hostlist("login"), Hosts({"login"})); }

TEST(Hostlist, CommaSeparatedHostsKeepTheirOrder) {
  EXPECT_EQ(expand_hostlist("zeta,alpha,mid"), Hosts({"zeta", "alpha", "mid"}));
}

TEST(Hostlist, DuplicatesAreKept) {
  EXPECT_EQ(expand_hostlist("n1,n1,n[1-2]"), Hosts({"n1", "n1", "n1", "n2"}));
}

TEST(Hostlist, SimpleRange) {
  EXPECT_EQ(expand_hostlist("node[1-3]"), Hosts({"node1", "node2", "node3"}));
}

TEST(Hostlist, ZeroPaddingIsKept) {
  EXPECT_EQ(expand_hostlist("node[001-003,010]"),
            Hosts({"node001", "node002", "node003", "node010"}));
}

TEST(Hostlist, PaddingComesFromTheLowNumber) {
  EXPECT_EQ(expand_hostlist("n[08-11]"), Hosts({"n08", "n09", "n10", "n11"}));
  EXPECT_EQ(expand_hostlist("n[8-11]"), Hosts({"n8", "n9", "n10", "n11"}));
  // SLURM takes the width from the low end only: "010" does not pad 9.
  EXPECT_EQ(expand_hostlist("n[9-010]"), Hosts({"n9", "n10"}));
}

TEST(Hostlist, SingleNumberInBrackets) {
  EXPECT_EQ(expand_hostlist("node[007]"), Hosts({"node007"}));
  EXPECT_EQ(expand_hostlist("n[5-5]"), Hosts({"n5"}));
}

TEST(Hostlist, NumbersInsideBracketsKeepTheirOrder) {
  EXPECT_EQ(expand_hostlist("n[3,1,2]"), Hosts({"n3", "n1", "n2"}));
  EXPECT_EQ(expand_hostlist("n[7-8,1-2]"), Hosts({"n7", "n8", "n1", "n2"}));
}

TEST(Hostlist, SeveralItemsWithRanges) {
  EXPECT_EQ(expand_hostlist("login-1,gpu[01-02],cpu[9-10]"),
            Hosts({"login-1", "gpu01", "gpu02", "cpu9", "cpu10"}));
}

TEST(Hostlist, PrefixWithDashesAndDots) {
  EXPECT_EQ(expand_hostlist("gpu-a100.rack-3.n[1-2]"),
            Hosts({"gpu-a100.rack-3.n1", "gpu-a100.rack-3.n2"}));
}

TEST(Hostlist, TextAfterTheBrackets) {
  EXPECT_EQ(expand_hostlist("n[1-2].cluster.local"),
            Hosts({"n1.cluster.local", "n2.cluster.local"}));
}

TEST(Hostlist, TwoBracketGroupsFirstGroupOutermost) {
  EXPECT_EQ(expand_hostlist("rack[1-2]-node[01-02]"),
            Hosts({"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"}));
}

TEST(Hostlist, AdjacentBracketGroups) {
  EXPECT_EQ(expand_hostlist("n[1-2][7-8]"), Hosts({"n17", "n18", "n27", "n28"}));
}

TEST(Hostlist, ThreeBracketGroupsInSlurmsOrder) {
  // hostlist.c: the last group varies fastest, then the first, then the second.
  EXPECT_EQ(expand_hostlist("a[1-2]b[1-2]c[1-2]"), Hosts({"a1b1c1", "a1b1c2", "a2b1c1", "a2b1c2",
                                                          "a1b2c1", "a1b2c2", "a2b2c1", "a2b2c2"}));
}

TEST(Hostlist, FourBracketGroupsInSlurmsOrder) {
  // Loops from the outside in: group 2, group 1, group 0, then group 3 innermost.
  EXPECT_EQ(expand_hostlist("w[1-2]x[1-2]y[1-2]z[1-2]"),
            Hosts({"w1x1y1z1", "w1x1y1z2", "w2x1y1z1", "w2x1y1z2", "w1x2y1z1", "w1x2y1z2",
                   "w2x2y1z1", "w2x2y1z2", "w1x1y2z1", "w1x1y2z2", "w2x1y2z1", "w2x1y2z2",
                   "w1x2y2z1", "w1x2y2z2", "w2x2y2z1", "w2x2y2z2"}));
}

TEST(Hostlist, GroupsWithListsAndPadding) {
  EXPECT_EQ(expand_hostlist("r[1,3]n[09-10]"), Hosts({"r1n09", "r1n10", "r3n09", "r3n10"}));
}

TEST(Hostlist, WhitespaceAroundItemsIsIgnored) {
  EXPECT_EQ(expand_hostlist(" node1 , node[2-3] "), Hosts({"node1", "node2", "node3"}));
  EXPECT_EQ(expand_hostlist("\tn1,\nn2\n"), Hosts({"n1", "n2"}));
}

TEST(Hostlist, LargestNumber) {
  EXPECT_EQ(expand_hostlist("n[18446744073709551615]"), Hosts({"n18446744073709551615"}));
  EXPECT_EQ(expand_hostlist("n[18446744073709551614-18446744073709551615]"),
            Hosts({"n18446744073709551614", "n18446744073709551615"}));
}

TEST(Hostlist, LargeRange) {
  Hosts hosts = expand_hostlist("n[00000-99999]");
  ASSERT_EQ(hosts.size(), 100000u);
  EXPECT_EQ(hosts[0], "n00000");
  EXPECT_EQ(hosts[12345], "n12345");
  EXPECT_EQ(hosts[99999], "n99999");
}

TEST(Hostlist, EmptyInput) {
  EXPECT_EQ(expand_error(""), "invalid host list \"\" at position 0: empty host list");
  EXPECT_EQ(expand_error("  "), "invalid host list \"  \" at position 0: empty host list");
}

TEST(Hostlist, EmptyItems) {
  EXPECT_EQ(expand_error("a,,b"), "invalid host list \"a,,b\" at position 2: empty host name");
  EXPECT_EQ(expand_error("a,"), "invalid host list \"a,\" at position 2: empty host name");
  EXPECT_EQ(expand_error(",a"), "invalid host list \",a\" at position 0: empty host name");
  EXPECT_EQ(expand_error("a, ,b"), "invalid host list \"a, ,b\" at position 3: empty host name");
}

TEST(Hostlist, UnclosedBracket) {
  EXPECT_EQ(expand_error("node[1-3"),
            "invalid host list \"node[1-3\" at position 4: '[' is never closed");
  EXPECT_EQ(expand_error("a,node[1,b"),
            "invalid host list \"a,node[1,b\" at position 6: '[' is never closed");
}

TEST(Hostlist, UnopenedBracket) {
  EXPECT_EQ(expand_error("node1-3]"),
            "invalid host list \"node1-3]\" at position 7: ']' without a matching '['");
  EXPECT_EQ(expand_error("n[1]]"),
            "invalid host list \"n[1]]\" at position 4: ']' without a matching '['");
}

TEST(Hostlist, NestedBrackets) {
  EXPECT_EQ(expand_error("node[1[2]]"),
            "invalid host list \"node[1[2]]\" at position 6: '[' inside brackets");
}

TEST(Hostlist, ReversedRange) {
  EXPECT_EQ(expand_error("node[3-1]"),
            "invalid host list \"node[3-1]\" at position 5: range 3-1 is reversed; expected low "
            "<= high");
  EXPECT_EQ(expand_error("n[1,10-09]"),
            "invalid host list \"n[1,10-09]\" at position 4: range 10-09 is reversed; expected "
            "low <= high");
}

TEST(Hostlist, EmptyRanges) {
  EXPECT_EQ(expand_error("node[]"),
            "invalid host list \"node[]\" at position 5: empty range inside brackets");
  EXPECT_EQ(expand_error("node[1,]"),
            "invalid host list \"node[1,]\" at position 7: empty range inside brackets");
  EXPECT_EQ(expand_error("node[,1]"),
            "invalid host list \"node[,1]\" at position 5: empty range inside brackets");
}

TEST(Hostlist, MissingNumbers) {
  EXPECT_EQ(expand_error("node[-3]"),
            "invalid host list \"node[-3]\" at position 5: missing number in range; expected "
            "digits");
  EXPECT_EQ(expand_error("node[1-]"),
            "invalid host list \"node[1-]\" at position 7: missing number in range; expected "
            "digits");
}

TEST(Hostlist, NonDigitsInRanges) {
  EXPECT_EQ(expand_error("node[a-3]"),
            "invalid host list \"node[a-3]\" at position 5: unexpected 'a' in a range; expected "
            "digits");
  EXPECT_EQ(expand_error("node[1-2-3]"),
            "invalid host list \"node[1-2-3]\" at position 8: unexpected '-' in a range; "
            "expected digits");
  EXPECT_EQ(expand_error("node[ 1]"),
            "invalid host list \"node[ 1]\" at position 5: unexpected ' ' in a range; expected "
            "digits");
  EXPECT_EQ(expand_error("node[+1]"),
            "invalid host list \"node[+1]\" at position 5: unexpected '+' in a range; expected "
            "digits");
}

TEST(Hostlist, WhitespaceInsideAName) {
  EXPECT_EQ(expand_error("no de"),
            "invalid host list \"no de\" at position 2: whitespace inside a host name");
}

TEST(Hostlist, NumberTooLarge) {
  EXPECT_EQ(expand_error("n[18446744073709551616]"),
            "invalid host list \"n[18446744073709551616]\" at position 2: number too large");
}

TEST(Hostlist, TooManyHostsInOneRange) {
  EXPECT_EQ(expand_error("n[0-1048576]"),
            "invalid host list \"n[0-1048576]\" at position 2: expands to more than 1048576 "
            "hosts");
  EXPECT_EQ(expand_error("n[0-18446744073709551615]"),
            "invalid host list \"n[0-18446744073709551615]\" at position 2: expands to more than "
            "1048576 hosts");
}

TEST(Hostlist, TooManyHostsFromSeveralGroups) {
  // 1024 x 1025 = 1049600 names, none of them built.
  EXPECT_EQ(expand_error("a[0-1023]b[0-1024]"),
            "invalid host list \"a[0-1023]b[0-1024]\" at position 0: expands to more than "
            "1048576 hosts");
}

TEST(Hostlist, TooManyHostsAcrossItems) {
  EXPECT_EQ(expand_error("a[1-1048576],b"),
            "invalid host list \"a[1-1048576],b\" at position 13: expands to more than 1048576 "
            "hosts");
}

TEST(Hostlist, ExactlyTheLimitIsAccepted) {
  Hosts hosts = expand_hostlist("a[1-1048575],b");
  ASSERT_EQ(hosts.size(), kMaxHosts);
  EXPECT_EQ(hosts[0], "a1");
  EXPECT_EQ(hosts[1048574], "a1048575");
  EXPECT_EQ(hosts[1048575], "b");
}

}  // namespace
}  // namespace ranks::launch
