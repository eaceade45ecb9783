#include "ranks/device.hpp"

#include <string>

namespace ranks {

std::string Device::str() const {
  if (type == Type::CPU) return "cpu";
  return "cuda:" + std::to_string(index);
}

}  // namespace ranks
