#include "ranks/detail/adjacent.hpp"

#include <cstddef>

namespace ranks::detail {

uint8_t* adjacent_outputs(TensorList& outputs, const Tensor& input) {
  if (outputs.empty()) return nullptr;
  const size_t each = input.nbytes();
  auto* first = static_cast<uint8_t*>(outputs.front().data_ptr());
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Tensor& out = outputs[j];
    if (out.device().type != Device::Type::CPU || out.nbytes() != each ||
        out.data_ptr() != first + j * each) {
      return nullptr;
    }
  }
  // As integers: comparing pointers into different objects is unspecified.
  const auto in = reinterpret_cast<uintptr_t>(input.data_ptr());
  const auto begin = reinterpret_cast<uintptr_t>(first);
  if (in + each > begin && in < begin + outputs.size() * each) return nullptr;
  return first;
}

}  // namespace ranks::detail
