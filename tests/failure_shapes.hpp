#pragma once
// The shapes of the failure texts every backend and the simulator share
// (runtime/ranks/detail/failure_text.hpp), as patterns a test holds a message against. They are
// written here from the documented shape, not from the code that builds the texts.

#include <regex>
#include <string>

namespace ranks::testing {

// ECMAScript-escapes text for use inside a pattern.
inline std::string escaped(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(text, special, R"(\$&)");
}

inline bool matches(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern));
}

// "rank 0 timed out after 300 ms in recv on group 'world/0,1' seq 0 at f.cpp:12 (waited ...); "
// (at: "f.cpp:12", "f.cpp:" for any line of f.cpp, "" for any call site)
inline std::string timeout_shape(int rank, const std::string& after, const std::string& op,
                                 const std::string& group, const std::string& at) {
  return "^rank " + std::to_string(rank) + " timed out after " + escaped(after) + " in " + op +
         " on group '" + escaped(group) + R"(' seq \d+ at )" +
         (at.empty() ? R"([\w.]+:\d+)" : escaped(at) + (at.ends_with(':') ? R"(\d+)" : "")) +
         R"(( \([^)]*\))?; )";
}

// "rank 0 lost rank 2 (<why>) while in all_reduce on group 'world' seq 1 at f.cpp:30"
inline std::string lost_peer_shape(int rank, const std::string& op, const std::string& group) {
  return "^rank " + std::to_string(rank) +
         R"( lost (rank \d+|another rank of the group) \(.+\) while in )" + op + " on group '" +
         escaped(group) + R"(' seq \d+ at [\w.]+:\d+)";
}

// "mismatched collectives on group 'world/0,1' at seq 0: rank 0 called broadcast(...) but rank
// 1 called broadcast(...); they differ in root" (the real backends add " (RANKS_DEBUG=detail)")
inline std::string mismatch_shape(const std::string& group, const std::string& op,
                                  const std::string& field) {
  return "^mismatched collectives on group '" + escaped(group) +
         R"(' at seq \d+( \(RANKS_DEBUG=detail\))?: rank \d+ called )" + op +
         R"(.* but rank \d+ called )" + op + ".*; they differ in .*" + field;
}

// "<op> on group 'world' seq 2 at f.cpp:40: group 'world' failed earlier and can no longer be
// used: <first failure>"
inline std::string failed_earlier_shape(const std::string& op, const std::string& group) {
  return "^" + op + " on group '" + escaped(group) + R"(' seq \d+ at [\w.]+:\d+: group ')" +
         escaped(group) + "' failed earlier and can no longer be used: ";
}

}  // namespace ranks::testing
