// libFuzzer target: the object decoder, as a rank reads a peer's payload (header and cereal
// body) in the object collectives. The first byte picks the type this rank expects, among
// shapes programs gather: numbers, strings, nested containers, maps, optionals, variants, and
// the audit's vector<array<double, 512>> and list of the same (whose corrupt counts once asked
// for 4,096 times the payload's size). A payload either decodes or fails with a ranks::Error; run with
// -malloc_limit_mb, an allocation far past the input's size fails the run.
//
// RANKS_FUZZ_WRITE_SEEDS=DIR writes the seed corpus (a valid payload of each type) to DIR.

#include <array>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ranks/errors.hpp"
#include "ranks/object/payload.hpp"

namespace {

using Metrics = std::map<std::string, std::vector<double>>;
using Rows = std::vector<std::vector<std::string>>;
using Record = std::tuple<int, std::string, std::optional<double>>;
using Either = std::variant<int64_t, std::string>;
using Counts = std::unordered_map<std::string, int>;
using Blocks = std::vector<std::array<double, 512>>;
using BlockList = std::list<std::array<double, 512>>;

template <class T>
void read_as(std::span<const uint8_t> payload) {
  try {
    (void)ranks::object::decode<T>(payload, "rank 1");
  } catch (const ranks::Error&) {
    // a corrupt or foreign payload: what the receiver must say of it
  }
}

template <class T>
void write_seed(const std::string& dir, const std::string& name, uint8_t type, const T& value) {
  const auto payload = ranks::object::encode(value);
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.put(static_cast<char>(type));
  out.write(reinterpret_cast<const char*>(payload.data()),
            static_cast<std::streamsize>(payload.size()));
}

void write_seeds(const std::string& dir) {
  write_seed(dir, "ints", 0, std::vector<int64_t>{1, -2, 3});
  write_seed(dir, "string", 1, std::string("results of rank 1"));
  write_seed(dir, "metrics", 2, Metrics{{"loss", {0.5, 0.25}}, {"acc", {0.9}}});
  write_seed(dir, "rows", 3, Rows{{"a", "b"}, {}, {"c"}});
  write_seed(dir, "record", 4, Record{7, "seven", 7.5});
  write_seed(dir, "either", 5, Either{std::string("text")});
  write_seed(dir, "counts", 6, Counts{{"x", 1}, {"y", 2}});
  write_seed(dir, "blocks", 7, Blocks(2));
  write_seed(dir, "block_list", 8, BlockList(2));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("RANKS_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> payload(data + 1, size - 1);
  switch (data[0] % 9) {
    case 0: read_as<std::vector<int64_t>>(payload); break;
    case 1: read_as<std::string>(payload); break;
    case 2: read_as<Metrics>(payload); break;
    case 3: read_as<Rows>(payload); break;
    case 4: read_as<Record>(payload); break;
    case 5: read_as<Either>(payload); break;
    case 6: read_as<Counts>(payload); break;
    case 7: read_as<Blocks>(payload); break;
    default: read_as<BlockList>(payload); break;
  }
  return 0;
}
