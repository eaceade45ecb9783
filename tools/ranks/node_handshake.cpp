#include "node_handshake.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <sstream>
#include <stdexcept>

namespace ranks::cli::handshake {

namespace {

constexpr size_t kHexDigits = 64;

std::string hex(const unsigned char* bytes, size_t n) {
  std::string text;
  text.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) text += fmt::format("{:02x}", bytes[i]);
  return text;
}

bool is_hex_word(const std::string& word) {
  return word.size() == kHexDigits &&
         word.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

std::string new_challenge() {
  std::array<unsigned char, kHexDigits / 2> random{};
  size_t got = 0;
  while (got < random.size()) {
    const ssize_t n = ::getrandom(random.data() + got, random.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("cannot draw a challenge for the node handshake");
    got += static_cast<size_t>(n);
  }
  return hex(random.data(), random.size());
}

std::string proof(const std::string& secret, Role role, int node, const std::string& challenge) {
  const std::string message =
      fmt::format("ranks node watch/{}/{}/{}", role == Role::kConnector ? "connector" : "listener",
                  node, challenge);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  // An empty key is a key too: a job started with --open-store has no secret to prove.
  static const unsigned char kNoKey = 0;
  const void* key = secret.empty() ? static_cast<const void*>(&kNoKey) : secret.data();
  if (::HMAC(EVP_sha256(), key, static_cast<int>(secret.size()),
             reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest.data(),
             &length) == nullptr) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return hex(digest.data(), length);
}

bool proves(const std::string& received, const std::string& expected) {
  return received.size() == expected.size() &&
         ::CRYPTO_memcmp(received.data(), expected.data(), expected.size()) == 0;
}

std::string challenge_line(const std::string& challenge) { return "challenge " + challenge; }

std::string hello_line(const Hello& hello) {
  return fmt::format("hello {} {} {}", hello.node, hello.challenge, hello.proof);
}

std::string welcome_line(const std::string& proof) { return "welcome " + proof; }

std::optional<std::string> parse_challenge(const std::string& line) {
  std::istringstream in(line);
  std::string word, challenge, rest;
  if (!(in >> word >> challenge) || word != "challenge" || !is_hex_word(challenge) || in >> rest) {
    return std::nullopt;
  }
  return challenge;
}

std::optional<Hello> parse_hello(const std::string& line) {
  std::istringstream in(line);
  std::string word, node, rest;
  Hello hello;
  if (!(in >> word >> node >> hello.challenge >> hello.proof) || word != "hello" || in >> rest ||
      !is_hex_word(hello.challenge) || !is_hex_word(hello.proof)) {
    return std::nullopt;
  }
  const auto [end, error] = std::from_chars(node.data(), node.data() + node.size(), hello.node);
  if (error != std::errc{} || end != node.data() + node.size() || hello.node < 0) {
    return std::nullopt;
  }
  return hello;
}

std::optional<std::string> parse_welcome(const std::string& line) {
  std::istringstream in(line);
  std::string word, proof, rest;
  if (!(in >> word >> proof) || word != "welcome" || !is_hex_word(proof) || in >> rest) {
    return std::nullopt;
  }
  return proof;
}

}  // namespace ranks::cli::handshake
