#pragma once
// Which C++ type a payload holds. Every payload carries a 64-bit tag of its type's name, so a
// rank that reads a std::vector<int> where another sent a std::vector<float> gets a Mismatch
// instead of the float bits reinterpreted: the cereal body alone carries no types, and a body of
// the same length reads back without complaint.
//
// The name comes from the compiler's __PRETTY_FUNCTION__, not typeid: it is known at compile
// time, needs no RTTI (many HPC builds turn it off) and reads well in a message. The ranks of one
// job run one build, so the spelling, which differs between compilers, is the same on all.

#include <cstdint>
#include <string_view>

namespace ranks::object {

namespace type_tag_detail {

template <class T>
constexpr std::string_view signature() {
  return __PRETTY_FUNCTION__;
}

// The text after "T = " up to the ';' or ']' that closes it, brackets counted: GCC writes
// "... [with T = std::vector<float>; std::string_view = ...]", clang "... [T =
// std::vector<float>]".
constexpr std::string_view name_in(std::string_view signature) {
  const size_t start = signature.find("T = ");
  if (start == std::string_view::npos) return signature;
  int depth = 0;
  for (size_t i = start + 4; i < signature.size(); ++i) {
    const char c = signature[i];
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || (c == ']' && depth > 0)) {
      --depth;
    } else if (depth == 0 && (c == ';' || c == ']')) {
      return signature.substr(start + 4, i - start - 4);
    }
  }
  return signature.substr(start + 4);
}

constexpr uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : text) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace type_tag_detail

// "std::vector<float>", as this compiler spells it.
template <class T>
constexpr std::string_view type_name() {
  return type_tag_detail::name_in(type_tag_detail::signature<T>());
}

template <class T>
constexpr uint64_t type_tag() {
  return type_tag_detail::fnv1a(type_name<T>());
}

}  // namespace ranks::object
