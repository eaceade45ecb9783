#include "marshal_bounds.hpp"

#include <cstring>
#include <vector>

namespace ranks::python {

namespace {

// The stream's type codes (CPython's Python/marshal.c, format version 4), those plain values use.
constexpr uint8_t kFlagRef = 0x80;  // on a type code: the object may be referred to later
constexpr uint8_t kNull = '0';      // ends a dict
constexpr uint8_t kNone = 'N';
constexpr uint8_t kFalse = 'F';
constexpr uint8_t kTrue = 'T';
constexpr uint8_t kInt = 'i';           // int32
constexpr uint8_t kLong = 'l';          // int32 n, then |n| 15-bit digits of 2 bytes
constexpr uint8_t kBinaryFloat = 'g';   // 8 bytes
constexpr uint8_t kBinaryComplex = 'y'; // 16 bytes
constexpr uint8_t kBytes = 's';         // int32 length, then the bytes
constexpr uint8_t kUnicode = 'u';
constexpr uint8_t kInterned = 't';
constexpr uint8_t kAscii = 'a';
constexpr uint8_t kAsciiInterned = 'A';
constexpr uint8_t kShortAscii = 'z';  // uint8 length
constexpr uint8_t kShortAsciiInterned = 'Z';
constexpr uint8_t kRef = 'r';         // uint32 index of an earlier object
constexpr uint8_t kSmallTuple = ')';  // uint8 count
constexpr uint8_t kTuple = '(';       // int32 count
constexpr uint8_t kList = '[';
constexpr uint8_t kSet = '<';
constexpr uint8_t kFrozenSet = '>';
constexpr uint8_t kDict = '{';  // key, value, ..., then kNull

struct Reader {
  std::span<const uint8_t> in;
  size_t at = 0;

  size_t left() const { return in.size() - at; }
  bool skip(uint64_t count) {
    if (count > left()) return false;
    at += static_cast<size_t>(count);
    return true;
  }
  bool u8(uint32_t& value) {
    if (left() < 1) return false;
    value = in[at++];
    return true;
  }
  bool u32(uint32_t& value) {
    if (left() < 4) return false;
    std::memcpy(&value, in.data() + at, 4);  // little-endian, as marshal writes it
    at += 4;
    return true;
  }
};

// A container whose items are still to come.
struct Open {
  uint64_t items_left = 0;  // tuples, lists, sets
  bool dict = false;
  bool value_next = false;  // a dict's next item is a value, not a key
  int64_t ref = -1;         // its index among the objects a reference may name, if it has one
};

std::string ends_early(const Reader& r) {
  return "ends early (at byte " + std::to_string(r.at) + " of " + std::to_string(r.in.size()) + ")";
}

}  // namespace

std::string marshal_stream_problem(std::span<const uint8_t> payload) {
  Reader r{payload};
  std::vector<Open> open;
  // The objects a reference ('r') may name, in the order CPython numbers them: each flagged
  // one, a container from when it opens. Whether each is complete: a reference to a container
  // still being read hands CPython a tuple with empty slots, which hashing it (as a set member
  // or dict key) dereferences, so a complete object is the only one a reference may name.
  std::vector<bool> complete;
  auto close = [&] {
    if (open.back().ref >= 0) complete[static_cast<size_t>(open.back().ref)] = true;
    open.pop_back();
  };
  bool root_read = false;
  for (;;) {
    if (open.empty()) {
      if (root_read) break;
    } else if (!open.back().dict && open.back().items_left == 0) {
      close();
      continue;
    }
    uint32_t code = 0;
    if (!r.u8(code)) return ends_early(r);
    const bool flagged = (code & kFlagRef) != 0;
    code &= ~uint32_t{kFlagRef};
    const bool at_dict_key = !open.empty() && open.back().dict && !open.back().value_next;
    if (code == kNull) {
      if (!at_dict_key) return "has a null at byte " + std::to_string(r.at - 1);
      close();
      continue;
    }
    if (open.empty()) {
      root_read = true;
    } else if (open.back().dict) {
      open.back().value_next = !open.back().value_next;
    } else {
      --open.back().items_left;
    }
    // CPython numbers flagged objects but not singletons and references.
    const bool numbered = flagged && code != kNone && code != kFalse && code != kTrue && code != kRef;
    if (numbered) complete.push_back(true);  // a container's is false until it closes, below
    uint32_t count = 0;
    switch (code) {
      case kNone:
      case kFalse:
      case kTrue:
        break;
      case kRef:
        if (!r.u32(count)) return ends_early(r);
        if (count >= complete.size() || !complete[count]) {
          return "refers at byte " + std::to_string(r.at - 5) + " to object " +
                 std::to_string(count) + ", which is " +
                 (count >= complete.size() ? "not there" : "still being read");
        }
        break;
      case kInt:
        if (!r.skip(4)) return ends_early(r);
        break;
      case kBinaryFloat:
        if (!r.skip(8)) return ends_early(r);
        break;
      case kBinaryComplex:
        if (!r.skip(16)) return ends_early(r);
        break;
      case kLong: {
        if (!r.u32(count)) return ends_early(r);
        const int64_t digits = static_cast<int32_t>(count);
        if (!r.skip(static_cast<uint64_t>(digits < 0 ? -digits : digits) * 2)) return ends_early(r);
        break;
      }
      case kBytes:
      case kUnicode:
      case kInterned:
      case kAscii:
      case kAsciiInterned:
        if (!r.u32(count) || !r.skip(count)) return ends_early(r);
        break;
      case kShortAscii:
      case kShortAsciiInterned:
        if (!r.u8(count) || !r.skip(count)) return ends_early(r);
        break;
      case kSmallTuple:
      case kTuple:
      case kList:
      case kSet:
      case kFrozenSet:
      case kDict: {
        if (code == kSmallTuple ? !r.u8(count) : code != kDict && !r.u32(count)) {
          return ends_early(r);
        }
        if (count > r.left()) {
          return "announces a container of " + std::to_string(count) + " items at byte " +
                 std::to_string(r.at) + " with " + std::to_string(r.left()) + " bytes left";
        }
        if (open.size() >= static_cast<size_t>(kMaxPlainDepth)) {
          return "nests containers more than " + std::to_string(kMaxPlainDepth) + " deep";
        }
        int64_t ref = -1;
        if (numbered) {
          ref = static_cast<int64_t>(complete.size()) - 1;
          complete.back() = false;
        }
        open.push_back({count, code == kDict, false, ref});
        break;
      }
      default:
        return "has type code " + std::to_string(code) + " at byte " + std::to_string(r.at - 1) +
               ", which no plain value is written with";
    }
  }
  if (r.left() != 0) {
    return "has " + std::to_string(r.left()) + " bytes after its value";
  }
  return {};
}

}  // namespace ranks::python
