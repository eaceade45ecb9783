#pragma once
// Loads of strings, vectors of numbers and std::map for InputArchive that read the same bytes as
// cereal's generic ones (so the format does not change) with less work per element: cereal's
// resize the container (zero-filling it) and then copy into it, and build each map entry on the
// side before moving it into a node: a third of the instructions of decoding a 10,000-entry
// map<string, vector<float>> that way. Overload resolution prefers these to cereal's templates
// over any archive (they are more specialized), and cereal finds them by ADL.
// Included by archive.hpp, after InputArchive; included first, it brings archive.hpp in (whose
// own include of this file is then skipped) so that it compiles on its own.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "ranks/object/archive.hpp"

namespace ranks::object {

namespace detail {

// Reads T values from bytes that need not be aligned for T (a payload packs them at any
// offset), so that vector::assign allocates once and copies without zero-filling first.
template <class T>
class UnalignedReader {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = const T*;
  using reference = T;

  UnalignedReader() = default;
  explicit UnalignedReader(const uint8_t* at) : at_(at) {}
  T operator*() const {
    T value;
    std::memcpy(&value, at_, sizeof value);
    return value;
  }
  UnalignedReader& operator++() {
    at_ += sizeof(T);
    return *this;
  }
  UnalignedReader operator++(int) {
    UnalignedReader before = *this;
    ++*this;
    return before;
  }
  bool operator==(const UnalignedReader&) const = default;

 private:
  const uint8_t* at_ = nullptr;
};

inline size_t load_size(InputArchive& ar) {
  cereal::size_type size = 0;
  ar(cereal::make_size_tag(size));  // checked against the bytes left
  return static_cast<size_t>(size);
}

}  // namespace detail

template <class Traits, class Alloc>
void CEREAL_LOAD_FUNCTION_NAME(InputArchive& ar, std::basic_string<char, Traits, Alloc>& str) {
  const size_t size = detail::load_size(ar);
  str.assign(reinterpret_cast<const char*>(ar.take(size)), size);
}

// bool is left to cereal: each byte is checked (archive.hpp's load of bool).
template <class T, class Alloc>
requires(std::is_arithmetic_v<T> &&
         !std::is_same_v<T, bool>) void CEREAL_LOAD_FUNCTION_NAME(InputArchive& ar,
                                                                  std::vector<T, Alloc>& vector) {
  const size_t size = detail::load_size(ar);
  const uint8_t* from = ar.take(size * sizeof(T));  // size <= bytes left: no overflow
  vector.assign(detail::UnalignedReader<T>(from),
                detail::UnalignedReader<T>(from + size * sizeof(T)));
}

// Entries come sorted (they were written from a std::map with the same comparator), so each one
// goes in at the end: one comparison, and the value is read straight into its node. A duplicate
// key (a corrupt payload) keeps the first value, as cereal's load does.
template <class Key, class Value, class Compare, class Alloc>
void CEREAL_LOAD_FUNCTION_NAME(InputArchive& ar, std::map<Key, Value, Compare, Alloc>& map) {
  const size_t size = detail::load_size(ar);
  map.clear();
  for (size_t i = 0; i < size; ++i) {
    Key key{};
    ar(key);
    const size_t before = map.size();
    auto at = map.emplace_hint(map.end(), std::piecewise_construct,
                               std::forward_as_tuple(std::move(key)), std::forward_as_tuple());
    if (map.size() > before) {
      ar(at->second);
    } else {
      Value ignored{};
      ar(ignored);
    }
  }
}

}  // namespace ranks::object
