// The JSON report keeps shared/API.md's schema: its keys, their types and allowed values.

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "harness.hpp"

namespace ranks::testing {
namespace {

void expect_schema(const sim::Report& report) {
  auto json = nlohmann::ordered_json::parse(report.to_json());
  std::vector<std::string> keys;
  for (auto it = json.begin(); it != json.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"outcome", "world_size", "seed", "virtual_time_ns",
                                            "message", "ranks", "cycle", "hazards"}));
  const std::set<std::string> outcomes = {"ok",          "deadlock", "timeout", "mismatch",
                                          "unsupported", "crash",    "error",   "hazard"};
  EXPECT_TRUE(outcomes.count(json["outcome"].get<std::string>()));
  EXPECT_TRUE(json["world_size"].is_number_integer());
  EXPECT_TRUE(json["seed"].is_number_unsigned());
  EXPECT_TRUE(json["virtual_time_ns"].is_number_integer());
  EXPECT_TRUE(json["message"].is_string());
  ASSERT_TRUE(json["ranks"].is_array());
  EXPECT_EQ(json["ranks"].size(), static_cast<size_t>(report.world_size));
  const std::set<std::string> states = {"finished", "blocked", "failed", "crashed"};
  // The schema's keys are in every row, whatever its state; the extras only when the op has
  // them.
  const std::vector<std::string> strings = {"state", "op", "group", "where", "error"};
  const std::set<std::string> extras = {"peer", "dtype", "count"};
  for (size_t i = 0; i < json["ranks"].size(); ++i) {
    const auto& row = json["ranks"][i];
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["rank"], static_cast<int>(i));
    EXPECT_TRUE(states.count(row["state"].get<std::string>()));
    for (const auto& key : strings) EXPECT_TRUE(row.contains(key) && row[key].is_string()) << key;
    EXPECT_TRUE(row.contains("seq") && row["seq"].is_number_integer());
    for (auto it = row.begin(); it != row.end(); ++it) {
      EXPECT_TRUE(it.key() == "rank" || it.key() == "seq" ||
                  std::count(strings.begin(), strings.end(), it.key()) || extras.count(it.key()))
          << it.key();
    }
  }
  EXPECT_TRUE(json["cycle"].is_array());
}

// The report is written by hand for speed; it must say what nlohmann would: every row's values,
// strings that need escaping (quotes, backslashes, newlines, control characters, UTF-8) included.
TEST(Report, RowsAreWhatNlohmannWouldWrite) {
  sim::Report report;
  report.outcome = sim::Outcome::Mismatch;
  report.world_size = 3;
  report.seed = 18446744073709551615ULL;
  report.virtual_time = std::chrono::nanoseconds(1234567890123);
  report.message = "rank 1 says \"no\"\nnext line\ttab \\ back";
  report.cycle = {0, 2};
  sim::RankReport plain;
  plain.rank = 0;
  plain.state = "finished";
  sim::RankReport tricky;
  tricky.rank = 1;
  tricky.state = "failed";
  tricky.op = "recv";
  tricky.group = "world/1,2";
  tricky.seq = 7;
  tricky.where = "caf\xc3\xa9.cpp:12";
  tricky.error = std::string("a \x01 control, a \x7f and \"quotes\"");
  tricky.peer = -1;
  tricky.dtype = "float32";
  tricky.count = 0;
  sim::RankReport root = plain;
  root.rank = 2;
  root.state = "blocked";
  root.op = "broadcast";
  root.peer = 0;
  report.ranks = {plain, tricky, root};

  std::vector<std::string> expected_rows;
  for (const sim::RankReport& row : report.ranks) {
    nlohmann::ordered_json j = {{"rank", row.rank},   {"state", row.state}, {"op", row.op},
                                {"group", row.group}, {"seq", row.seq},     {"where", row.where},
                                {"error", row.error}};
    if (row.peer) j["peer"] = *row.peer;
    if (!row.dtype.empty()) j["dtype"] = row.dtype;
    if (row.count >= 0) j["count"] = row.count;
    expected_rows.push_back(j.dump());
  }
  const std::string text = report.to_json();
  for (const std::string& row : expected_rows) {
    EXPECT_NE(text.find("\n    " + row), std::string::npos) << row << "\nin\n" << text;
  }
  const auto json = nlohmann::ordered_json::parse(text);
  EXPECT_EQ(json["message"], report.message);
  EXPECT_EQ(json["seed"].get<uint64_t>(), report.seed);
  EXPECT_EQ(json["virtual_time_ns"].get<int64_t>(), 1234567890123);
  EXPECT_EQ(json["cycle"], nlohmann::json::array({0, 2}));
  EXPECT_EQ(json["ranks"][1]["where"], tricky.where);
  EXPECT_EQ(json["ranks"][1]["error"], tricky.error);
}

TEST(Report, OkRunFollowsTheSchema) {
  auto report = simulate(3, [] { barrier(); });
  EXPECT_EQ(report.outcome, sim::Outcome::Ok);
  expect_schema(report);
}

TEST(Report, DeadlockFollowsTheSchemaAndNamesTheCallSite) {
  const int line = __LINE__ + 4;
  auto report = simulate(4, [] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    if (get_rank() == 3) return;  // never arrives
    barrier();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock);
  expect_schema(report);
  auto json = nlohmann::json::parse(report.to_json());
  EXPECT_EQ(json["ranks"][0]["state"], "blocked");
  EXPECT_EQ(json["ranks"][0]["op"], "barrier");
  EXPECT_EQ(json["ranks"][0]["where"], "report_test.cpp:" + std::to_string(line));
  EXPECT_EQ(json["ranks"][3]["state"], "finished");
  EXPECT_EQ(json["ranks"][3]["op"], "");
  EXPECT_EQ(json["ranks"][3]["seq"], -1);
  EXPECT_EQ(json["ranks"][3]["error"], "");
  EXPECT_NE(json["message"].get<std::string>().find("missing: rank 3"), std::string::npos)
      << json["message"];
}

// A body that throws outside any op, and a rank that crashes while sleeping: rows with no group
// or seq still have the keys.
TEST(Report, FailuresOutsideCollectivesFollowTheSchema) {
  auto thrown = simulate(3, [] {
    if (get_rank() == 2) throw std::runtime_error("boom on rank 2");
    barrier();
  });
  expect_schema(thrown);
  sim::Options options = default_options();
  options.faults = {"crash:rank=1,at=1"};
  auto crashed = simulate(
      2, [] { sleep_for(std::chrono::seconds(2)); }, options);
  EXPECT_EQ(crashed.outcome, sim::Outcome::Crash) << crashed.to_text();
  expect_schema(crashed);
}

TEST(Report, TextReportGroupsIdenticalRanks) {
  auto report = simulate(10, [] {
    if (get_rank() == 9) return;
    barrier();
  });
  std::string text = report.to_text();
  EXPECT_NE(text.find("ranks 0-8"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 9"), std::string::npos) << text;
}

}  // namespace
}  // namespace ranks::testing
