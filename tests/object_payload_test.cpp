// The object payload format: round trips of every kind of type object collectives accept, and
// payloads that are truncated, corrupt, from another format version, over the size limit or of
// another type: each must raise ranks::Error with a message naming the origin, never crash and
// never allocate what a bogus length asks for.

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

using object::Bytes;
using object::decode;
using object::encode;

struct Detection {
  std::string label;
  std::vector<float> box;
  std::optional<int> track;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(label, box, track);
  }
  friend bool operator==(const Detection&, const Detection&) = default;
};

template <class T>
void expect_round_trip(const T& value) {
  EXPECT_EQ(decode<T>(encode(value), "test"), value);
}

TEST(ObjectPayload, RoundTripsEveryKindOfType) {
  expect_round_trip(42);
  expect_round_trip(-1.5);
  expect_round_trip(true);
  expect_round_trip(std::numeric_limits<int64_t>::min());
  expect_round_trip(std::string("foo"));
  expect_round_trip(std::string());
  expect_round_trip(std::vector<float>{1.5f, -2.0f, 3.25f});
  expect_round_trip(std::vector<bool>{true, false, true});
  expect_round_trip(std::vector<std::string>{"a", "", "ccc"});
  expect_round_trip(std::map<int, int>{{1, 2}, {3, 4}});
  expect_round_trip(std::map<std::string, std::vector<float>>{{"loss", {0.5f}}, {"acc", {}}});
  expect_round_trip(std::unordered_map<std::string, int>{{"a", 1}, {"b", 2}});
  expect_round_trip(std::optional<int>{});
  expect_round_trip(std::optional<int>{7});
  expect_round_trip(std::variant<std::monostate, std::string, int>{});
  expect_round_trip(std::variant<std::monostate, std::string, int>{std::string("x")});
  expect_round_trip(std::pair<int, std::string>{1, "one"});
  expect_round_trip(std::tuple<int, double, std::string>{1, 2.5, "three"});
  expect_round_trip(Detection{"cat", {0, 1, 2, 3}, 5});
  expect_round_trip(std::vector<Detection>{{"a", {}, std::nullopt}, {"b", {1}, 2}});
}

// The loads of strings, number vectors and maps (container_loads.hpp) read in place from any
// offset; the values below sit at odd offsets of their payloads.
TEST(ObjectPayload, ContainersAtUnalignedOffsets) {
  expect_round_trip(std::tuple<std::string, std::vector<double>>{"abc", {1.5, -2.0, 1e300}});
  expect_round_trip(
      std::tuple<uint8_t, std::vector<int16_t>, std::vector<uint8_t>>{7, {-1, 2}, {}});
  expect_round_trip(std::tuple<char, std::vector<int64_t>>{'x', {}});
  expect_round_trip(std::map<std::string, std::map<int, std::string>>{{"k", {{3, "c"}, {1, "a"}}}});
  expect_round_trip(std::map<int, double, std::greater<>>{{1, 0.5}, {9, 2.5}, {4, -1.0}});
  std::map<std::string, std::vector<float>> many;
  for (int i = 0; i < 1000; ++i)
    many["k" + std::to_string(i)] = std::vector<float>(i % 9, 0.5f * i);
  expect_round_trip(many);
}

// A map's entries are (key, value) in a row, as a vector of pairs writes them: entries out of
// order still make the right map, and a repeated key (a corrupt payload) keeps its first value,
// as cereal's own load does, with the rest read normally.
// A payload of one type with the header of another (what a corrupt or hostile sender can
// write): the body is then read as T's and must be checked as such.
template <class T>
Bytes retagged_as(Bytes bytes) {
  const uint64_t tag = object::type_tag<T>();
  std::memcpy(bytes.data() + 16, &tag, 8);
  return bytes;
}

TEST(ObjectPayload, MapEntriesOutOfOrderOrRepeated) {
  using Entries = std::vector<std::pair<std::string, int>>;
  using Map = std::map<std::string, int>;
  EXPECT_EQ(decode<Map>(retagged_as<Map>(encode(Entries{{"b", 1}, {"a", 2}, {"c", 3}})), "test"),
            (Map{{"a", 2}, {"b", 1}, {"c", 3}}));
  EXPECT_EQ(decode<Map>(retagged_as<Map>(encode(Entries{{"a", 1}, {"a", 2}, {"b", 3}})), "test"),
            (Map{{"a", 1}, {"b", 3}}));
}

// encode() measures an object before writing it; a serialize() that writes more the second time
// (it should not, but nothing stops it) still gets all of its bytes written.
struct GrowsEachTime {
  mutable int calls = 0;
  template <class Archive>
  void save(Archive& ar) const {
    ++calls;
    ar(std::vector<int>(static_cast<size_t>(calls) * 1000, calls));
  }
};

TEST(ObjectPayload, AnObjectThatGrowsWhileEncodedIsWrittenWhole) {
  GrowsEachTime value;
  const Bytes bytes = encode(value);
  EXPECT_EQ(value.calls, 2);
  EXPECT_EQ(decode<std::vector<int>>(retagged_as<std::vector<int>>(bytes), "test"),
            std::vector<int>(2000, 2));
}

TEST(ObjectPayload, HeaderIsMagicVersionLengthAndType) {
  Bytes bytes = encode(int32_t{7});
  ASSERT_EQ(bytes.size(), 24u + 4u);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "rkob");
  uint16_t version = 0;
  uint64_t length = 0;
  std::memcpy(&version, bytes.data() + 4, 2);
  std::memcpy(&length, bytes.data() + 8, 8);
  EXPECT_EQ(version, 2);
  EXPECT_EQ(length, 4u);
  // FNV-1a (64-bit) of the type's name, computed here from its definition.
  uint64_t expected_tag = 14695981039346656037ull;
  for (char c : std::string("int")) {
    expected_tag = (expected_tag ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  }
  uint64_t tag = 0;
  std::memcpy(&tag, bytes.data() + 16, 8);
  EXPECT_EQ(tag, expected_tag);
  int32_t body = 0;
  std::memcpy(&body, bytes.data() + 24, 4);
  EXPECT_EQ(body, 7);
}

TEST(ObjectPayload, TypeNamesAsWritten) {
  EXPECT_EQ(object::type_name<int>(), "int");
  EXPECT_EQ(object::type_name<std::vector<float>>(), "std::vector<float>");
  // Compilers spell namespaces and spaces their own way; the bracket counting must hold.
  const std::string map = std::string(object::type_name<std::map<int, Detection>>());
  EXPECT_TRUE(map.starts_with("std::map<int, ") && map.ends_with("Detection>")) << map;
  EXPECT_EQ((object::type_name<std::array<int, 3>>()), "std::array<int, 3>");
  const std::string array = std::string(object::type_name<std::vector<int[3]>>());
  EXPECT_TRUE(array.starts_with("std::vector<int") && array.ends_with("[3]>")) << array;
  EXPECT_NE(object::type_tag<std::vector<float>>(), object::type_tag<std::vector<int>>());
}

// Runs decode<T> and returns the ranks::Error message ("" when it did not throw).
template <class T>
std::string decode_error(const Bytes& bytes) {
  try {
    (void)decode<T>(bytes, "rank 3");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void set_length(Bytes& bytes, uint64_t length) { std::memcpy(bytes.data() + 8, &length, 8); }

TEST(ObjectPayload, TruncatedPayloads) {
  const Bytes whole = encode(std::vector<std::string>{"alpha", "beta"});
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    Bytes part(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
    if (cut >= 24) set_length(part, cut - 24);  // a consistent header over a short body
    const std::string message = decode_error<std::vector<std::string>>(part);
    EXPECT_TRUE(Contains(message, "corrupt object payload from rank 3")) << "cut " << cut;
  }
}

TEST(ObjectPayload, BadHeaders) {
  Bytes bytes = encode(std::string("foo"));
  Bytes bad_magic = bytes;
  bad_magic[0] = 'x';
  EXPECT_TRUE(Contains(decode_error<std::string>(bad_magic), "does not start with the object"));
  Bytes bad_version = bytes;
  bad_version[4] = 9;
  EXPECT_TRUE(Contains(decode_error<std::string>(bad_version), "format version 9"));
  Bytes long_header = bytes;
  set_length(long_header, 1000);
  EXPECT_TRUE(Contains(decode_error<std::string>(long_header), "announces 1000 bytes but 11"));
}

TEST(ObjectPayload, HugeLengthsAreRejectedBeforeAllocating) {
  // A vector claiming 2^60 elements: the length is checked against the bytes left first.
  Bytes bytes = encode(std::vector<double>{1.0});
  const uint64_t huge = uint64_t{1} << 60;
  std::memcpy(bytes.data() + 24, &huge, 8);
  EXPECT_TRUE(
      Contains(decode_error<std::vector<double>>(bytes), "a length of 1152921504606846976"));
  Bytes text = encode(std::string("abc"));
  std::memcpy(text.data() + 24, &huge, 8);
  EXPECT_TRUE(Contains(decode_error<std::string>(text), "bytes left"));
}

TEST(ObjectPayload, ALengthCannotAskForMuchMoreMemoryThanThePayloadHas) {
  // A 64 KiB body that reads as a vector of 4 KiB elements whose length is every byte left:
  // refused before the vector is sized (it would be 256 MiB), and so in a deque, and in a
  // vector inside a vector.
  using Big = std::array<double, 512>;
  const Bytes body(64 * 1024, 0);
  auto payload_of = [&](uint64_t type_tag) {
    Bytes bytes(object::header_bytes);
    object::write_header(bytes, body.size(), type_tag);
    bytes.insert(bytes.end(), body.begin(), body.end());
    uint64_t length = body.size() - 8;  // every byte after the length itself
    std::memcpy(bytes.data() + 24, &length, 8);
    return bytes;
  };
  const std::string vector_error =
      decode_error<std::vector<Big>>(payload_of(object::type_tag<std::vector<Big>>()));
  EXPECT_TRUE(Contains(vector_error, "elements of 4096 bytes would take")) << vector_error;
  const std::string deque_error =
      decode_error<std::deque<Big>>(payload_of(object::type_tag<std::deque<Big>>()));
  EXPECT_TRUE(Contains(deque_error, "elements of 4096 bytes would take")) << deque_error;
  // A list's node is its element and two links (cereal would have made the whole list first).
  const std::string list_error =
      decode_error<std::list<Big>>(payload_of(object::type_tag<std::list<Big>>()));
  EXPECT_TRUE(Contains(list_error,
                       fmt::format("elements of {} bytes would take", 4096 + 2 * sizeof(void*))))
      << list_error;
  Bytes nested = payload_of(object::type_tag<std::vector<std::vector<Big>>>());
  const uint64_t one = 1;  // one inner vector, whose own length is every byte left
  std::memcpy(nested.data() + 24, &one, 8);
  const uint64_t inner = body.size() - 16;
  std::memcpy(nested.data() + 32, &inner, 8);
  const std::string nested_error = decode_error<std::vector<std::vector<Big>>>(nested);
  EXPECT_TRUE(Contains(nested_error, "elements of 4096 bytes would take")) << nested_error;
  // What real payloads of these types hold decodes as before.
  const std::vector<Big> two(2, Big{});
  EXPECT_EQ(decode<std::vector<Big>>(encode(two), "test"), two);
  const std::vector<std::string> empties(1000);
  EXPECT_EQ(decode<std::vector<std::string>>(encode(empties), "test"), empties);
  const std::deque<std::vector<int>> rows = {{1, 2}, {}, {3}};
  EXPECT_EQ(decode<std::deque<std::vector<int>>>(encode(rows), "test"), rows);
  const std::list<std::string> names = {"a", "", "ccc"};
  EXPECT_EQ(decode<std::list<std::string>>(encode(names), "test"), names);
}

TEST(ObjectPayload, InvalidValuesAndWrongTypes) {
  Bytes flag = encode(true);
  flag[24] = 2;
  EXPECT_TRUE(Contains(decode_error<bool>(flag), "a bool holds the byte 2"));
  Bytes choice = encode(std::variant<int, std::string>{5});
  const int32_t index = 7;
  std::memcpy(choice.data() + 24, &index, 4);
  EXPECT_TRUE(Contains(decode_error<std::variant<int, std::string>>(choice), "corrupt"));
  // Another type is a Mismatch named by the type, even where the bytes would read back.
  EXPECT_TRUE(Contains(decode_error<int32_t>(encode(int64_t{1})),
                       "the object from rank 3 is not of this rank's type int"));
  EXPECT_THROW((void)decode<float>(encode(int32_t{1}), "rank 3"), Mismatch);
  // A payload whose tag was rewritten to the reader's type still has its body checked.
  EXPECT_TRUE(Contains(decode_error<int32_t>(retagged_as<int32_t>(encode(int64_t{1}))),
                       "do all ranks pass the same type"));
}

TEST(ObjectPayload, SizeLimitFromTheEnvironment) {
  const Bytes bytes = encode(std::string(100, 'x'));
  setenv("RANKS_MAX_OBJECT_BYTES", "50", 1);
  const std::string message = decode_error<std::string>(bytes);
  setenv("RANKS_MAX_OBJECT_BYTES", "lots", 1);
  EXPECT_THROW((void)object::max_payload_bytes(), InvalidArgument);
  unsetenv("RANKS_MAX_OBJECT_BYTES");
  EXPECT_TRUE(Contains(message, "over the limit of 50 (RANKS_MAX_OBJECT_BYTES)"));
  EXPECT_EQ(object::max_payload_bytes(), uint64_t{8} << 30);
  EXPECT_EQ(decode<std::string>(bytes, "test"), std::string(100, 'x'));
}

}  // namespace
}  // namespace ranks::testing
