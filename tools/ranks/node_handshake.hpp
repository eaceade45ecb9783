#pragma once
// How two launchers of one job prove to each other that each holds the job's secret without it
// crossing the network. The listening launcher sends a fresh random challenge; the connecting
// one answers with its node, a challenge of its own and the HMAC-SHA256, under the secret, of
// the listener's challenge; the listener checks it and answers the second challenge the same
// way. Each proof names its role and node, so a proof is good for one direction of one
// connection only: a stranger can neither replay nor reflect what it overheard.
//
//   listener  -> "challenge <64 hex>"
//   connector -> "hello <node> <64 hex: its challenge> <64 hex: proof>"
//   listener  -> "welcome <64 hex: proof>"
//
// Every line has a fixed shape well under 256 bytes, whatever the secret's length.

#include <optional>
#include <string>

namespace ranks::cli::handshake {

enum class Role { kConnector, kListener };

// 32 random bytes from the kernel, as 64 hex digits.
std::string new_challenge();

// HMAC-SHA256 under secret of (role, node, challenge), as 64 hex digits.
std::string proof(const std::string& secret, Role role, int node, const std::string& challenge);

// Whether a proof received equals the one expected, in time that does not depend on where
// they differ.
bool proves(const std::string& received, const std::string& expected);

struct Hello {
  int node = -1;
  std::string challenge;
  std::string proof;
};

std::string challenge_line(const std::string& challenge);
std::string hello_line(const Hello& hello);
std::string welcome_line(const std::string& proof);

// The parts of a line of each kind; nullopt for anything else.
std::optional<std::string> parse_challenge(const std::string& line);
std::optional<Hello> parse_hello(const std::string& line);
std::optional<std::string> parse_welcome(const std::string& line);

}  // namespace ranks::cli::handshake
