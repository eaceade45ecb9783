#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ranks/errors.hpp"
#include "ranks/tensor.hpp"

namespace ranks {
namespace {

// The DLPack encoding of each dtype, written out independently of dlpack.cpp.
struct DLCode {
  DType dtype;
  uint8_t code;
  uint8_t bits;
};
constexpr DLCode kCodes[] = {
    {DType::Bool, 6, 8},
    {DType::UInt8, kDLUInt, 8},
    {DType::Int8, kDLInt, 8},
    {DType::Int32, kDLInt, 32},
    {DType::Int64, kDLInt, 64},
    {DType::Float16, kDLFloat, 16},
    {DType::BFloat16, kDLBfloat, 16},
    {DType::Float32, kDLFloat, 32},
    {DType::Float64, kDLFloat, 64},
};

// A tensor whose bytes differ from element to element (0/1 for bool, which allows nothing else).
Tensor patterned(std::vector<int64_t> shape, DType dtype, Device device) {
  Tensor t = Tensor::empty(std::move(shape), dtype, Device::cpu());
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) {
    p[i] = dtype == DType::Bool ? static_cast<unsigned char>(i % 3 == 0)
                                : static_cast<unsigned char>(i * 37 + 11);
  }
  return t.to(device);
}

// A hand-built DLManagedTensor over caller memory whose deleter counts its calls.
struct Fixture {
  int deletions = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};

  Fixture(void* data, std::vector<int64_t> shape_in, DLDataType dtype)
      : shape(std::move(shape_in)) {
    managed.dl_tensor.data = data;
    managed.dl_tensor.device = {kDLCPU, 0};
    managed.dl_tensor.ndim = static_cast<int>(shape.size());
    managed.dl_tensor.dtype = dtype;
    managed.dl_tensor.shape = shape.data();
    managed.dl_tensor.strides = nullptr;
    managed.dl_tensor.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      ++static_cast<Fixture*>(self->manager_ctx)->deletions;
    };
  }
  void set_strides(std::vector<int64_t> s) {
    strides = std::move(s);
    managed.dl_tensor.strides = strides.data();
  }
};

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

std::string import_error(Fixture& f) {
  try {
    (void)Tensor::from_dlpack(&f.managed);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected ranks::InvalidArgument";
  return "";
}

TEST(DLPack, ExportDescribesTheTensor) {
  Tensor t = patterned({2, 3, 4}, DType::Int32, Device::cuda(2));
  DLManagedTensor* m = t.to_dlpack();
  ASSERT_NE(m, nullptr);
  const DLTensor& dl = m->dl_tensor;
  EXPECT_EQ(dl.data, t.data_ptr());  // zero-copy
  EXPECT_EQ(dl.device.device_type, kDLCUDA);
  EXPECT_EQ(dl.device.device_id, 2);
  ASSERT_EQ(dl.ndim, 3);
  EXPECT_EQ(std::vector<int64_t>(dl.shape, dl.shape + 3), (std::vector<int64_t>{2, 3, 4}));
  ASSERT_NE(dl.strides, nullptr);
  EXPECT_EQ(std::vector<int64_t>(dl.strides, dl.strides + 3), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(dl.byte_offset, 0u);
  EXPECT_EQ(dl.dtype.code, kDLInt);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  ASSERT_NE(m->deleter, nullptr);
  m->deleter(m);

  DLManagedTensor* cpu = Tensor::zeros({5}, DType::Float64).to_dlpack();
  EXPECT_EQ(cpu->dl_tensor.device.device_type, kDLCPU);
  EXPECT_EQ(cpu->dl_tensor.device.device_id, 0);
  cpu->deleter(cpu);
}

TEST(DLPack, RoundTripKeepsEverythingForEveryDType) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 3}, {}, {0, 5}, {7}};
  for (const DLCode& c : kCodes) {
    for (const auto& shape : shapes) {
      for (Device device : {Device::cpu(), Device::cuda(0), Device::cuda(3)}) {
        SCOPED_TRACE(dtype_name(c.dtype));
        SCOPED_TRACE(device.str());
        Tensor t = patterned(shape, c.dtype, device);
        const Tensor reference = t.clone();
        DLManagedTensor* m = t.to_dlpack();
        EXPECT_EQ(m->dl_tensor.dtype.code, c.code);
        EXPECT_EQ(m->dl_tensor.dtype.bits, c.bits);
        EXPECT_EQ(m->dl_tensor.dtype.lanes, 1);
        EXPECT_EQ(m->dl_tensor.ndim, static_cast<int>(shape.size()));
        void* const data = t.data_ptr();
        t = Tensor();  // the export alone must keep the memory alive

        Tensor back = Tensor::from_dlpack(m);
        EXPECT_EQ(back.dtype(), c.dtype);
        EXPECT_EQ(back.shape(), shape);
        EXPECT_EQ(back.device(), device);
        EXPECT_EQ(back.data_ptr(), data);
        EXPECT_TRUE(back.equal(reference));
      }
    }
  }
}

TEST(DLPack, ExportKeepsMemoryAliveUntilItsDeleterRuns) {
  Tensor t = Tensor::of<int64_t>({4, 5, 6});
  DLManagedTensor* m = t.to_dlpack();
  t = Tensor();
  const auto* values = static_cast<const int64_t*>(m->dl_tensor.data);
  EXPECT_EQ(values[0], 4);
  EXPECT_EQ(values[2], 6);
  m->deleter(m);  // ASan reports a leak if this does not free, a use-after-free if above did
}

TEST(DLPack, ImportedDeleterRunsExactlyOnceWhenTheLastCopyDies) {
  float buffer[4] = {1, 2, 3, 4};
  Fixture f(buffer, {4}, kFloat32);
  {
    Tensor t = Tensor::from_dlpack(&f.managed);
    EXPECT_EQ(t.data_ptr(), buffer);
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
    Tensor copy = t;
    {
      Tensor another = copy;
      t = Tensor();
    }
    EXPECT_EQ(f.deletions, 0);
    Tensor cloned = copy.clone();
    copy = Tensor();
    EXPECT_EQ(f.deletions, 1);
    EXPECT_EQ(cloned.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  }
  EXPECT_EQ(f.deletions, 1);
}

TEST(DLPack, ReExportingAnImportChainsTheOwnership) {
  float buffer[2] = {1, 2};
  Fixture f(buffer, {2}, kFloat32);
  DLManagedTensor* exported = Tensor::from_dlpack(&f.managed).to_dlpack();
  EXPECT_EQ(f.deletions, 0);
  EXPECT_EQ(exported->dl_tensor.data, buffer);
  exported->deleter(exported);
  EXPECT_EQ(f.deletions, 1);
}

TEST(DLPack, ImportAcceptsNullOrCompactStrides) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  {
    Fixture f(buffer, {2, 3}, kFloat32);
    EXPECT_EQ(Tensor::from_dlpack(&f.managed).shape(), (std::vector<int64_t>{2, 3}));
  }
  {
    Fixture f(buffer, {2, 3}, kFloat32);
    f.set_strides({3, 1});
    EXPECT_EQ(Tensor::from_dlpack(&f.managed).to_vector<float>()[4], 4.0f);
  }
  {
    // Extent-1 dimensions are never stepped over, so their stride does not matter.
    Fixture f(buffer, {2, 1, 3}, kFloat32);
    f.set_strides({3, 99, 1});
    EXPECT_EQ(Tensor::from_dlpack(&f.managed).numel(), 6);
  }
  {
    Fixture f(buffer, {0, 3}, kFloat32);
    f.set_strides({5, 7});  // an empty tensor has no layout
    EXPECT_EQ(Tensor::from_dlpack(&f.managed).numel(), 0);
  }
}

TEST(DLPack, ImportHonoursByteOffset) {
  float buffer[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  Fixture f(buffer, {2, 3}, kFloat32);
  f.managed.dl_tensor.byte_offset = 2 * sizeof(float);
  Tensor t = Tensor::from_dlpack(&f.managed);
  EXPECT_EQ(t.data_ptr(), buffer + 2);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{2, 3, 4, 5, 6, 7}));
}

TEST(DLPack, ImportMapsDevicesAndBool) {
  uint8_t flags[3] = {1, 0, 1};
  {
    Fixture f(flags, {3}, DLDataType{6, 8, 1});
    Tensor t = Tensor::from_dlpack(&f.managed);
    EXPECT_EQ(t.dtype(), DType::Bool);
    EXPECT_EQ(t.to_vector<bool>(), (std::vector<bool>{true, false, true}));
  }
  {
    Fixture f(flags, {3}, DLDataType{kDLUInt, 8, 1});
    f.managed.dl_tensor.device = {kDLCUDA, 3};
    Tensor t = Tensor::from_dlpack(&f.managed);
    EXPECT_EQ(t.dtype(), DType::UInt8);
    EXPECT_EQ(t.device(), Device::cuda(3));
  }
  {
    Fixture f(flags, {3}, DLDataType{kDLInt, 8, 1});
    f.managed.dl_tensor.device = {kDLCUDAHost, 0};  // pinned host memory is plain cpu memory
    EXPECT_EQ(Tensor::from_dlpack(&f.managed).device(), Device::cpu());
  }
  {
    Fixture f(nullptr, {0}, kFloat32);  // no memory behind an empty tensor is fine
    Tensor t = Tensor::from_dlpack(&f.managed);
    EXPECT_TRUE(t.defined());
    EXPECT_EQ(t.numel(), 0);
  }
}

TEST(DLPack, ImportRejectsNull) {
  EXPECT_THROW((void)Tensor::from_dlpack(nullptr), InvalidArgument);
}

// Each rejection leaves ownership with the caller: the deleter must not have run.
TEST(DLPack, ImportRejectsWhatItCannotRepresent) {
  alignas(64) float buffer[8] = {};
  auto expect_rejected = [](Fixture& f, const std::string& part) {
    const std::string message = import_error(f);
    EXPECT_NE(message.find(part), std::string::npos) << message;
    EXPECT_EQ(f.deletions, 0) << message;
  };
  {
    Fixture f(buffer, {2, 3}, kFloat32);
    f.set_strides({1, 2});  // column-major
    expect_rejected(f, "not compact row-major");
  }
  {
    Fixture f(buffer, {2, 2}, kFloat32);
    f.set_strides({4, 1});  // row padding
    expect_rejected(f, "strides [4, 1]");
  }
  {
    Fixture f(buffer, {2}, DLDataType{kDLFloat, 32, 4});
    expect_rejected(f, "4 lanes");
  }
  {
    Fixture f(buffer, {2}, DLDataType{kDLComplex, 64, 1});
    expect_rejected(f, "code 5 with 64 bits");
  }
  {
    Fixture f(buffer, {2}, DLDataType{kDLInt, 16, 1});
    expect_rejected(f, "not supported");
  }
  {
    Fixture f(buffer, {2}, DLDataType{kDLFloat, 8, 1});
    expect_rejected(f, "not supported");
  }
  {
    Fixture f(buffer, {2}, kFloat32);
    f.managed.dl_tensor.device = {kDLOpenCL, 0};
    expect_rejected(f, "device type 4");
  }
  {
    Fixture f(buffer, {2}, kFloat32);
    f.managed.dl_tensor.device = {kDLCUDA, -1};
    expect_rejected(f, "-1");
  }
  {
    Fixture f(buffer, {2, -3}, kFloat32);
    expect_rejected(f, "negative dimension");
  }
  {
    Fixture f(buffer, {2}, kFloat32);
    f.managed.dl_tensor.ndim = -1;
    expect_rejected(f, "ndim");
  }
  {
    Fixture f(buffer, {2}, kFloat32);
    f.managed.dl_tensor.shape = nullptr;
    expect_rejected(f, "shape is null");
  }
  {
    Fixture f(nullptr, {2}, kFloat32);
    expect_rejected(f, "data is null");
  }
  {
    Fixture f(buffer, {2}, kFloat32);
    f.managed.dl_tensor.byte_offset = 2;  // floats at odd addresses
    expect_rejected(f, "not aligned");
  }
}

}  // namespace
}  // namespace ranks
