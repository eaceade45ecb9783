#pragma once
// Where a tensor's memory lives.

#include <string>

namespace ranks {

struct Device {
  enum class Type { CPU, CUDA };
  Type type = Type::CPU;
  int index = 0;

  static Device cpu() { return {Type::CPU, 0}; }
  static Device cuda(int index = 0) { return {Type::CUDA, index}; }
  bool is_cpu() const { return type == Type::CPU; }
  bool is_cuda() const { return type == Type::CUDA; }
  std::string str() const;  // "cpu", "cuda:0"
  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace ranks
