#pragma once
// The byte format of object collectives: cereal's archive interface over a byte vector. On input
// every length is checked against the bytes that are left before anything is allocated, so a
// truncated, corrupt or hostile payload fails with an error instead of a huge allocation or a
// read past the end. cereal's own binary archive trusts its lengths, and streams cost a copy.

#include <algorithm>
#include <bit>
#include <cereal/cereal.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/common.hpp>
#include <cereal/types/deque.hpp>
#include <cereal/types/list.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/set.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/tuple.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/unordered_set.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace ranks::object {

// Arithmetic values are written as their bytes in memory: the byte order is fixed to
// little-endian by refusing to build elsewhere (every target of NCCL, Gloo and Open MPI we run on
// is little-endian); a big-endian port would swap in write_scalar/read_scalar and BinaryData.
static_assert(std::endian::native == std::endian::little, "object payloads are little-endian");

using Bytes = std::vector<uint8_t>;

// Writes into `out` from its current end, with memcpy: an element costs a few instructions, not
// a vector::insert call (which was a third of encoding a map of small vectors). The vector is
// sized ahead (encode() measures the object first with a counting archive, which writes
// nothing): growing it by doubling cost more in fresh pages than the counting pass costs. If a
// serialize() writes more the second time, the vector still grows; the destructor cuts off what
// was not written, so read `out` only after the archive is gone.
class OutputArchive : public cereal::OutputArchive<OutputArchive, cereal::AllowEmptyClassElision> {
 public:
  // Counts the bytes written, stores nothing.
  OutputArchive() : cereal::OutputArchive<OutputArchive, cereal::AllowEmptyClassElision>(this) {}
  // Appends to out.
  explicit OutputArchive(Bytes& out) : OutputArchive() {
    out_ = &out;
    used_ = out.size();
  }
  ~OutputArchive() override {
    if (out_ != nullptr) out_->resize(used_);
  }
  OutputArchive(const OutputArchive&) = delete;
  OutputArchive& operator=(const OutputArchive&) = delete;

  void write(const void* data, size_t count) {
    if (out_ != nullptr) {
      if (count > out_->size() - used_) grow(count);
      if (count > 0) std::memcpy(out_->data() + used_, data, count);
    }
    used_ += count;
  }
  // Where the next write goes; from a counting archive, the bytes the object takes.
  size_t written() const { return used_; }
  // Room for count more bytes without growing (the counting pass's result).
  void reserve(size_t count) {
    if (out_ != nullptr && count > out_->size() - used_) out_->resize(used_ + count);
  }

 private:
  void grow(size_t count) {
    out_->resize(std::max({out_->size() * 2, used_ + count, size_t{4096}}));
  }

  Bytes* out_ = nullptr;
  size_t used_ = 0;
};

class InputArchive : public cereal::InputArchive<InputArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit InputArchive(std::span<const uint8_t> in)
      : cereal::InputArchive<InputArchive, cereal::AllowEmptyClassElision>(this), in_(in) {}

  void read(void* data, size_t count) {
    const uint8_t* from = take(count);
    if (count > 0) std::memcpy(data, from, count);
  }
  // The next count bytes, in place (for loads that copy them straight into their container).
  const uint8_t* take(size_t count) {
    if (count > remaining()) {
      throw cereal::Exception("the payload ends " + std::to_string(count - remaining()) +
                              " bytes early");
    }
    const uint8_t* at = in_.data() + position_;
    position_ += count;
    return at;
  }
  size_t remaining() const { return in_.size() - position_; }

 private:
  std::span<const uint8_t> in_;
  size_t position_ = 0;
};

template <class T>
requires std::is_arithmetic_v<T>
void CEREAL_SAVE_FUNCTION_NAME(OutputArchive& ar, const T& value) {
  ar.write(&value, sizeof value);
}

template <class T>
requires std::is_arithmetic_v<T>
void CEREAL_LOAD_FUNCTION_NAME(InputArchive& ar, T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    // Any byte but 0 or 1 in a bool is undefined behaviour once loaded: reject it as corrupt.
    uint8_t byte = 0;
    ar.read(&byte, 1);
    if (byte > 1) throw cereal::Exception("a bool holds the byte " + std::to_string(byte));
    value = byte == 1;
  } else {
    ar.read(&value, sizeof value);
  }
}

template <class Archive, class T>
requires std::is_same_v<Archive, InputArchive> || std::is_same_v<Archive, OutputArchive>
void CEREAL_SERIALIZE_FUNCTION_NAME(Archive& ar, cereal::NameValuePair<T>& pair) { ar(pair.value); }

template <class T>
void CEREAL_SAVE_FUNCTION_NAME(OutputArchive& ar, const cereal::SizeTag<T>& tag) {
  ar(tag.size);
}

// A container of n elements takes at least n bytes (elements of empty types are not written,
// so those are the one thing this format refuses), so a length larger than what is left is a
// corrupt payload; checking it here bounds what the container's load() allocates.
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(InputArchive& ar, cereal::SizeTag<T>& tag) {
  ar(tag.size);
  if (static_cast<uint64_t>(tag.size) > ar.remaining()) {
    throw cereal::Exception("a length of " + std::to_string(tag.size) + " with " +
                            std::to_string(ar.remaining()) + " bytes left");
  }
}

template <class T>
void CEREAL_SAVE_FUNCTION_NAME(OutputArchive& ar, const cereal::BinaryData<T>& data) {
  ar.write(data.data, static_cast<size_t>(data.size));
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(InputArchive& ar, cereal::BinaryData<T>& data) {
  ar.read(data.data, static_cast<size_t>(data.size));
}

}  // namespace ranks::object

#include "ranks/object/container_loads.hpp"  // IWYU pragma: export

CEREAL_SETUP_ARCHIVE_TRAITS(ranks::object::InputArchive, ranks::object::OutputArchive)
