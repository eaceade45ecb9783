#pragma once
// Loads of strings, vectors of numbers and std::map for InputArchive that read the same bytes as
// cereal's generic ones (so the format does not change) with less work per element: cereal's
// resize the container (zero-filling it) and then copy into it, and build each map entry on the
// side before moving it into a node: a third of the instructions of decoding a 10,000-entry
// map<string, vector<float>> that way. Overload resolution prefers these to cereal's templates
// over any archive (they are more specialized), and cereal finds them by ADL. Vectors of other
// types, deques and lists get loads of their own for one reason: to bound the memory a corrupt
// length makes them take before their elements are read (cereal sizes them first).
// Included by archive.hpp, after InputArchive; included first, it brings archive.hpp in (whose
// own include of this file is then skipped) so that it compiles on its own.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <list>
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

// What the elements of a container that is sized before its elements are read (a vector or
// deque of anything but numbers) may take, per byte of payload left. A corrupt length is
// already at most the bytes left (archive.hpp), but an element can take far more memory than
// the one byte that check allows it: 65,536 elements of std::array<double, 512> from a 64 KiB
// body would be 256 MiB. A real payload stays far below this bound: its elements are in the
// bytes that follow.
inline constexpr size_t kMemoryPerPayloadByte = 64;
inline constexpr size_t kMemorySlack = 64 * 1024;

template <class T>
void check_allocation(const InputArchive& ar, size_t count) {
  const size_t bound = ar.remaining() * kMemoryPerPayloadByte + kMemorySlack;
  if (count > bound / sizeof(T)) {
    throw cereal::Exception("a length of " + std::to_string(count) + " elements of " +
                            std::to_string(sizeof(T)) + " bytes would take " +
                            std::to_string(count) + " x " + std::to_string(sizeof(T)) +
                            " bytes of memory from a payload with " +
                            std::to_string(ar.remaining()) + " bytes left (at most " +
                            std::to_string(kMemoryPerPayloadByte) + " per byte)");
  }
}

// What one element of a container takes: a list's node adds its two links to the element.
template <class Container>
inline constexpr size_t element_memory = sizeof(typename Container::value_type);
template <class T, class Alloc>
inline constexpr size_t element_memory<std::list<T, Alloc>> = sizeof(T) + 2 * sizeof(void*);

// Sizes container (a vector, deque or list) to a checked length, then reads its elements.
template <class Container>
void load_sized(InputArchive& ar, Container& container) {
  const size_t size = load_size(ar);
  check_allocation<std::array<char, element_memory<Container>>>(ar, size);
  container.clear();
  container.resize(size);
  for (auto& element : container) ar(element);
}

}  // namespace detail

template <class T, class Alloc>
requires(!std::is_arithmetic_v<T>) void CEREAL_LOAD_FUNCTION_NAME(InputArchive& ar,
                                                                  std::vector<T, Alloc>& vector) {
  detail::load_sized(ar, vector);
}

template <class T, class Alloc>
void CEREAL_LOAD_FUNCTION_NAME(InputArchive& ar, std::deque<T, Alloc>& deque) {
  detail::load_sized(ar, deque);
}

template <class T, class Alloc>
void CEREAL_LOAD_FUNCTION_NAME(InputArchive& ar, std::list<T, Alloc>& list) {
  detail::load_sized(ar, list);
}

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
