// DLPack 0.6 interop. Tensors are exported zero-copy with explicit compact strides; imports take
// ownership of the producer's DLManagedTensor and reject anything that is not one contiguous
// block of a dtype the library knows.

#include <dlpack/dlpack.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ranks/detail/dlpack_bool.hpp"
#include "ranks/detail/memory.hpp"
#include "ranks/errors.hpp"
#include "ranks/tensor.hpp"

namespace ranks {

namespace {

using detail::kDLBoolCode;

DLDataType to_dl_dtype(DType dtype) {
  DLDataType out{};
  out.lanes = 1;
  out.bits = static_cast<uint8_t>(dtype_size(dtype) * 8);
  switch (dtype) {
    case DType::Bool:
      out.code = kDLBoolCode;
      break;
    case DType::UInt8:
      out.code = kDLUInt;
      break;
    case DType::Int8:
    case DType::Int32:
    case DType::Int64:
      out.code = kDLInt;
      break;
    case DType::Float16:
    case DType::Float32:
    case DType::Float64:
      out.code = kDLFloat;
      break;
    case DType::BFloat16:
      out.code = kDLBfloat;
      break;
  }
  return out;
}

std::optional<DType> from_dl_dtype(DLDataType dl) {
  for (DType dtype : all_dtypes) {
    const DLDataType candidate = to_dl_dtype(dtype);
    if (candidate.code == dl.code && candidate.bits == dl.bits) return dtype;
  }
  return std::nullopt;
}

std::vector<int64_t> compact_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

// What a DLManagedTensor produced by to_dlpack points into: the tensor (which keeps the memory
// alive) and the arrays its shape and strides fields point at.
struct ExportContext {
  Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};
};

void delete_export(DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); }

}  // namespace

DLManagedTensor* Tensor::to_dlpack() const {
  if (!defined()) {
    throw InvalidArgument(
        "to_dlpack(): the tensor is undefined (default-constructed); only defined tensors can be "
        "exported");
  }
  auto ctx = std::make_unique<ExportContext>();
  ctx->tensor = *this;
  ctx->shape = shape();
  ctx->strides = compact_strides(ctx->shape);
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = data_;
  dl.device.device_type = device_.is_cuda() ? kDLCUDA : kDLCPU;
  dl.device.device_id = device_.is_cuda() ? device_.index : 0;
  dl.ndim = static_cast<int>(ctx->shape.size());
  dl.dtype = to_dl_dtype(dtype_);
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = &delete_export;
  return &ctx.release()->managed;
}

Tensor Tensor::from_dlpack(DLManagedTensor* managed) {
  // Every check happens before ownership is taken: on error the caller still owns managed and
  // must call its deleter.
  if (managed == nullptr) throw InvalidArgument("from_dlpack(): the DLManagedTensor is null");
  const DLTensor& dl = managed->dl_tensor;

  Device device;
  switch (dl.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
      device = Device::cpu();
      break;
    case kDLCUDA:
      if (dl.device.device_id < 0) {
        throw InvalidArgument(fmt::format(
            "from_dlpack(): cuda device id {} is negative: it must be >= 0", dl.device.device_id));
      }
      device = Device::cuda(dl.device.device_id);
      break;
    default:
      throw InvalidArgument(fmt::format(
          "from_dlpack(): device type {} is not supported: only kDLCPU (1), kDLCUDA (2) and "
          "kDLCUDAHost (3) are",
          static_cast<int>(dl.device.device_type)));
  }

  if (dl.dtype.lanes != 1) {
    throw InvalidArgument(fmt::format(
        "from_dlpack(): dtype has {} lanes: only scalar element types (lanes == 1) are supported",
        dl.dtype.lanes));
  }
  const std::optional<DType> dtype = from_dl_dtype(dl.dtype);
  if (!dtype) {
    throw InvalidArgument(fmt::format(
        "from_dlpack(): dtype code {} with {} bits is not supported: valid are bool (6, 8), "
        "uint8 (1, 8), int8/int32/int64 (0, 8/32/64), float16/float32/float64 (2, 16/32/64) and "
        "bfloat16 (4, 16)",
        dl.dtype.code, dl.dtype.bits));
  }

  if (dl.ndim < 0) {
    throw InvalidArgument(fmt::format("from_dlpack(): ndim is {}: it must be >= 0", dl.ndim));
  }
  if (dl.ndim > 0 && dl.shape == nullptr) {
    throw InvalidArgument(fmt::format("from_dlpack(): shape is null but ndim is {}", dl.ndim));
  }
  std::vector<int64_t> shape(dl.shape, dl.shape + dl.ndim);
  const int64_t numel = detail::checked_numel(shape, *dtype);

  // Dimensions of extent 1 are never stepped over, so producers (torch among them) may give
  // them any stride; an empty tensor has no layout at all.
  if (dl.strides != nullptr && numel > 0) {
    const std::vector<int64_t> expected = compact_strides(shape);
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] != 1 && dl.strides[i] != expected[i]) {
        throw InvalidArgument(fmt::format(
            "from_dlpack(): strides [{}] for shape {} are not compact row-major (expected [{}]): "
            "only contiguous tensors can be imported",
            fmt::join(dl.strides, dl.strides + dl.ndim, ", "), detail::shape_str(shape),
            fmt::join(expected, ", ")));
      }
    }
  }

  void* data = nullptr;
  if (dl.data != nullptr) data = static_cast<char*>(dl.data) + dl.byte_offset;
  if (numel > 0) {
    if (data == nullptr) {
      throw InvalidArgument(fmt::format("from_dlpack(): data is null but shape {} has {} elements",
                                        detail::shape_str(shape), numel));
    }
    // data<T>() hands out typed pointers, which must be aligned for T.
    if (reinterpret_cast<uintptr_t>(data) % dtype_size(*dtype) != 0) {
      throw InvalidArgument(fmt::format(
          "from_dlpack(): data + byte_offset ({}) is not aligned to the {}-byte {} element size",
          data, dtype_size(*dtype), dtype_name(*dtype)));
    }
  }

  Tensor t;
  // The storage owns the DLManagedTensor itself (never null, so the tensor is defined even when
  // data is) and hands it back to its producer when the last copy goes away.
  std::shared_ptr<void> capsule(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter != nullptr) m->deleter(m);
  });
  auto memory = detail::own_with_shape(std::move(capsule), managed, std::move(shape));
  t.storage_ = std::move(memory.storage);
  t.data_ = data;
  t.shape_ = memory.shape;
  t.numel_ = numel;
  t.dtype_ = *dtype;
  t.device_ = device;
  return t;
}

}  // namespace ranks
