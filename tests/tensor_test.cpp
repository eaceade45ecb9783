#include "ranks/tensor.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "ranks/errors.hpp"

namespace ranks {
namespace {

// Substring check without gmock, printing the whole message on failure.
::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// The message of the InvalidArgument that f throws ("" and a test failure if it throws nothing).
template <class F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected ranks::InvalidArgument";
  return "";
}

bool all_bytes_zero(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

TEST(Tensor, DefaultIsUndefined) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.str(), "undefined tensor");
  EXPECT_EQ(t.describe(), "undefined tensor");
  EXPECT_TRUE(t.equal(Tensor()));
  EXPECT_FALSE(t.equal(Tensor::zeros({1}, DType::Float32)));
  EXPECT_TRUE(contains(invalid_argument_message([&] { (void)t.clone(); }), "undefined"));
  EXPECT_THROW((void)t.to(Device::cpu()), InvalidArgument);
  EXPECT_THROW(t.copy_(Tensor::zeros({0}, DType::Float32)), InvalidArgument);
  EXPECT_THROW((void)t.to_dlpack(), InvalidArgument);
}

TEST(Tensor, EmptyHasShapeSizeAndAlignedMemory) {
  for (DType dtype : all_dtypes) {
    Tensor t = Tensor::empty({2, 3, 4}, dtype);
    EXPECT_TRUE(t.defined());
    EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(t.dim(), 3);
    EXPECT_EQ(t.numel(), 24);
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.element_size(), dtype_size(dtype));
    EXPECT_EQ(t.nbytes(), 24 * dtype_size(dtype));
    EXPECT_EQ(t.device(), Device::cpu());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16, 0u) << dtype_name(dtype);
    // Above 1 KiB, a whole cache line.
    Tensor big = Tensor::empty({1025}, dtype);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data_ptr()) % 64, 0u) << dtype_name(dtype);
  }
}

TEST(Tensor, ZerosAreZeroForEveryDType) {
  for (DType dtype : all_dtypes) {
    Tensor t = Tensor::zeros({5, 7}, dtype);
    EXPECT_EQ(t.numel(), 35);
    EXPECT_TRUE(all_bytes_zero(t)) << dtype_name(dtype);
  }
  EXPECT_EQ(Tensor::zeros({3}, DType::Float64).to_vector<double>(), std::vector<double>(3, 0.0));
}

TEST(Tensor, OfAndFromCopyValues) {
  Tensor t = Tensor::of<float>({1.5f, -2.0f, 3.25f});
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 3.25f}));

  std::vector<int64_t> values = {1, 2, 3, 4, 5, 6};
  Tensor m = Tensor::from(values, {2, 3});
  values[0] = 100;  // from() copied, so the tensor must not see this
  EXPECT_EQ(m.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m.dtype(), DType::Int64);
  EXPECT_EQ(m.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(m.data<int64_t>()[5], 6);

  EXPECT_EQ(Tensor::of<bool>({true, false}).dtype(), DType::Bool);
  EXPECT_EQ(Tensor::of<bool>({true, false, true}).to_vector<bool>(),
            (std::vector<bool>{true, false, true}));
  EXPECT_TRUE(Tensor::of<bool>({true}).item<bool>());
  EXPECT_EQ(Tensor::of<uint8_t>({255}).to_vector<uint8_t>(), std::vector<uint8_t>{255});
  EXPECT_EQ(Tensor::of<int8_t>({-128}).item<int8_t>(), -128);
  EXPECT_EQ(Tensor::of<int32_t>({-7, 9}).to_vector<int32_t>(), (std::vector<int32_t>{-7, 9}));
  EXPECT_EQ(Tensor::of<double>({0.1}).item<double>(), 0.1);
  EXPECT_EQ(Tensor::of<float16_t>({float16_t::from_bits(0x3c00)}).item<float16_t>().bits, 0x3c00);
  EXPECT_EQ(Tensor::of<bfloat16_t>({bfloat16_t::from_bits(0x3f80)}).dtype(), DType::BFloat16);
}

TEST(Tensor, FromRejectsAShapeThatDoesNotHoldTheValues) {
  const std::vector<float> values(5, 1.0f);
  const std::string message = invalid_argument_message([&] { (void)Tensor::from(values, {2, 3}); });
  EXPECT_TRUE(contains(message, "[2, 3]"));
  EXPECT_TRUE(contains(message, "holds 6 elements but 5 values"));
  EXPECT_THROW((void)Tensor::from(values, {5, 0}), InvalidArgument);
  EXPECT_EQ(Tensor::from(values, {5, 1}).shape(), (std::vector<int64_t>{5, 1}));
}

TEST(Tensor, NegativeDimensionsAreRejectedEverywhere) {
  const std::string message = invalid_argument_message([] {
    (void)Tensor::empty({2, -1}, DType::Float32);
  });
  EXPECT_TRUE(contains(message, "-1"));
  EXPECT_TRUE(contains(message, ">= 0"));
  EXPECT_THROW((void)Tensor::zeros({-3}, DType::Int8), InvalidArgument);
  EXPECT_THROW((void)Tensor::from(std::vector<int32_t>{}, {0, -2}), InvalidArgument);
  int32_t x = 0;
  EXPECT_THROW((void)Tensor::from_blob(&x, {-1}, DType::Int32, Device::cpu()), InvalidArgument);
}

TEST(Tensor, SizeOverflowIsRejected) {
  const int64_t big = int64_t{1} << 62;
  EXPECT_TRUE(contains(invalid_argument_message([&] {
                         (void)Tensor::empty({big, 4}, DType::Float32);
                       }),
                       "too large"));
  EXPECT_THROW((void)Tensor::empty({big, 2}, DType::Int64), InvalidArgument);  // bytes overflow
  EXPECT_THROW((void)Tensor::empty({big, big, big}, DType::UInt8), InvalidArgument);
  // A size that fits the type but not the machine (4 PiB): a ranks::Error saying how much.
  try {
    (void)Tensor::empty({int64_t{1} << 50}, DType::Float32);
    ADD_FAILURE() << "4 PiB were allocated";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cannot allocate 4503599627370496 bytes")) << e.what();
  }
  // A zero dimension makes even huge shapes empty.
  Tensor t = Tensor::empty({std::numeric_limits<int64_t>::max(), 0, big}, DType::Float64);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.nbytes(), 0u);
}

TEST(Tensor, ScalarsHaveNoDimensionsAndOneElement) {
  Tensor s = Tensor::zeros({}, DType::Int64);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_TRUE(s.shape().empty());
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.nbytes(), 8u);
  s.data<int64_t>()[0] = -42;
  EXPECT_EQ(s.item<int64_t>(), -42);
  EXPECT_EQ(s.describe(), "int64[] on cpu");
  EXPECT_EQ(s.clone().item<int64_t>(), -42);
  EXPECT_EQ(s.clone().shape(), std::vector<int64_t>{});
}

TEST(Tensor, ItemNeedsExactlyOneElement) {
  EXPECT_TRUE(contains(invalid_argument_message([] {
                         (void)Tensor::of<int32_t>({1, 2}).item<int32_t>();
                       }),
                       "exactly one element, but this one has 2"));
  EXPECT_THROW((void)Tensor::zeros({0}, DType::Int32).item<int32_t>(), InvalidArgument);
  EXPECT_EQ(Tensor::of<int32_t>({9}).item<int32_t>(), 9);
}

TEST(Tensor, ZeroElementTensorsWorkEverywhere) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{0}, std::vector<int64_t>{3, 0, 2}}) {
    Tensor t = Tensor::empty(shape, DType::Float32);
    EXPECT_TRUE(t.defined());
    EXPECT_EQ(t.numel(), 0);
    EXPECT_EQ(t.nbytes(), 0u);
    EXPECT_TRUE(t.to_vector<float>().empty());
    Tensor c = t.clone();
    EXPECT_TRUE(c.defined());
    EXPECT_EQ(c.shape(), shape);
    EXPECT_TRUE(c.equal(t));
    Tensor z = Tensor::zeros(shape, DType::Float32, Device::cuda(0));
    z.copy_(t);
    EXPECT_EQ(t.to(Device::cuda(1)).device(), Device::cuda(1));
  }
  Tensor f = Tensor::from(std::vector<int32_t>{});
  EXPECT_EQ(f.shape(), std::vector<int64_t>{0});
  EXPECT_EQ(Tensor::zeros({0}, DType::Bool).describe(), "bool[0] on cpu");
  EXPECT_EQ(Tensor::zeros({0}, DType::Bool).str(), "bool[0] on cpu []");
}

TEST(Tensor, WrongDTypeAccessIsAnError) {
  Tensor t = Tensor::zeros({2, 3}, DType::Float32);
  EXPECT_EQ(invalid_argument_message([&] { (void)t.data<int64_t>(); }),
            "tensor holds float32 but data<int64>() was asked for");
  const Tensor& ct = t;
  EXPECT_THROW((void)ct.data<double>(), InvalidArgument);
  EXPECT_THROW((void)t.to_vector<int32_t>(), InvalidArgument);
  EXPECT_THROW((void)t.item<float16_t>(), InvalidArgument);
  EXPECT_EQ(t.data<float>(), t.data_ptr());
  EXPECT_TRUE(
      contains(invalid_argument_message([] { (void)Tensor::of<bool>({true}).data<uint8_t>(); }),
               "tensor holds bool but data<uint8>()"));
}

// Tensors of up to 16 bytes keep shape and bytes in one allocation (detail::allocate_with_shape);
// at 17 bytes they take the general path. Either way copies, shapes, alignment and lifetimes
// behave alike.
TEST(Tensor, SmallAndLargerTensorsBehaveAlike) {
  for (int64_t count : {0, 1, 2, 3, 4, 5}) {
    std::vector<int32_t> values(static_cast<size_t>(count));
    std::iota(values.begin(), values.end(), 7);
    Tensor t = Tensor::from<int32_t>(values, {1, count});
    EXPECT_EQ(t.shape(), (std::vector<int64_t>{1, count}));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16, 0u) << count;
    Tensor copy = t;
    Tensor like = detail::empty_like(t, Device::cpu());
    t = Tensor();  // the copies keep shape and bytes alive
    EXPECT_EQ(copy.to_vector<int32_t>(), values) << count;
    EXPECT_EQ(copy.shape(), (std::vector<int64_t>{1, count}));
    EXPECT_EQ(like.shape(), (std::vector<int64_t>{1, count}));
    like.copy_(copy);
    copy = Tensor();
    EXPECT_EQ(like.to_vector<int32_t>(), values) << count;
  }
}

// What a gather fills: rows of one block, back to back, each with like's shape and dtype; writing
// one leaves the others, and any row keeps the block (and the shared shape) alive.
TEST(Tensor, RowsLikeAreBackToBackRowsOfOneBlock) {
  for (int64_t count : {0, 1, 3, 40}) {  // inline-sized, small and larger rows
    Tensor like = Tensor::zeros({count, 1}, DType::Int64);
    std::vector<Tensor> rows = detail::rows_like(like, 3, Device::cpu());
    ASSERT_EQ(rows.size(), 3u);
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i].shape(), like.shape());
      EXPECT_EQ(rows[i].dtype(), DType::Int64);
      if (count > 0) {
        EXPECT_EQ(static_cast<std::byte*>(rows[i].data_ptr()),
                  static_cast<std::byte*>(rows[0].data_ptr()) + i * like.nbytes());
      }
      std::vector<int64_t> values(static_cast<size_t>(count), static_cast<int64_t>(10 * i + 1));
      rows[i].copy_(Tensor::from<int64_t>(values, {count, 1}));
    }
    Tensor kept = rows[1];
    rows.clear();
    like = Tensor();
    EXPECT_EQ(kept.shape(), (std::vector<int64_t>{count, 1}));
    EXPECT_EQ(kept.to_vector<int64_t>(), std::vector<int64_t>(static_cast<size_t>(count), 11));
  }
  EXPECT_TRUE(detail::rows_like(Tensor::of<float>({1}), 0, Device::cpu()).empty());
}

TEST(Tensor, CopiesShareMemoryButClonesDoNot) {
  Tensor t = Tensor::of<int32_t>({1, 2, 3});
  Tensor shared = t;
  Tensor cloned = t.clone();
  EXPECT_EQ(shared.data_ptr(), t.data_ptr());
  EXPECT_NE(cloned.data_ptr(), t.data_ptr());
  EXPECT_EQ(cloned.shape(), t.shape());
  EXPECT_EQ(cloned.dtype(), t.dtype());

  shared.data<int32_t>()[0] = 10;
  cloned.data<int32_t>()[1] = 20;
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{10, 2, 3}));
  EXPECT_EQ(cloned.to_vector<int32_t>(), (std::vector<int32_t>{1, 20, 3}));

  // The memory outlives the original handle.
  t = Tensor();
  EXPECT_EQ(shared.to_vector<int32_t>(), (std::vector<int32_t>{10, 2, 3}));
}

TEST(Tensor, FromBlobBorrows) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  Tensor t = Tensor::from_blob(buffer, {2, 3}, DType::Float32, Device::cpu());
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.data_ptr(), buffer);
  EXPECT_EQ(t.numel(), 6);
  buffer[4] = 40;
  EXPECT_EQ(t.to_vector<float>()[4], 40.0f);
  t.data<float>()[0] = -1;
  EXPECT_EQ(buffer[0], -1.0f);
  Tensor copy = t;
  EXPECT_EQ(copy.data_ptr(), buffer);
  // Dropping every handle must not free memory the tensor never owned (ASan would notice).
  t = Tensor();
  copy = Tensor();
  EXPECT_EQ(buffer[5], 5.0f);

  EXPECT_TRUE(contains(invalid_argument_message([] {
                         (void)Tensor::from_blob(nullptr, {2}, DType::Int64, Device::cpu());
                       }),
                       "null"));
  Tensor empty_blob = Tensor::from_blob(nullptr, {0, 4}, DType::Int64, Device::cpu());
  EXPECT_TRUE(empty_blob.defined());
  EXPECT_EQ(empty_blob.numel(), 0);
}

TEST(Tensor, CopyIntoRequiresSameDTypeAndElementCount) {
  Tensor dst = Tensor::zeros({2, 3}, DType::Float32);
  Tensor src = Tensor::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  dst.copy_(src);  // shapes may differ, the element count may not
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(dst.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_NE(dst.data_ptr(), src.data_ptr());

  const std::string dtype_message =
      invalid_argument_message([&] { dst.copy_(Tensor::zeros({6}, DType::Int32)); });
  EXPECT_TRUE(contains(dtype_message, "float32[2, 3] on cpu"));
  EXPECT_TRUE(contains(dtype_message, "int32[6] on cpu"));
  const std::string numel_message =
      invalid_argument_message([&] { dst.copy_(Tensor::zeros({5}, DType::Float32)); });
  EXPECT_TRUE(contains(numel_message, "float32[5] on cpu"));
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));  // untouched

  dst.copy_(dst);  // copying onto itself is harmless
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(Tensor, EqualComparesShapeDTypeAndBytes) {
  Tensor a = Tensor::of<int32_t>({1, 2, 3, 4});
  EXPECT_TRUE(a.equal(a));
  EXPECT_TRUE(a.equal(a.clone()));
  EXPECT_TRUE(a.equal(a.to(Device::cuda(0))));  // devices may differ
  Tensor b = a.clone();
  b.data<int32_t>()[3] = 5;
  EXPECT_FALSE(a.equal(b));
  EXPECT_FALSE(a.equal(Tensor::from(std::vector<int32_t>{1, 2, 3, 4}, {2, 2})));
  EXPECT_FALSE(Tensor::zeros({4}, DType::Int32).equal(Tensor::zeros({4}, DType::Float32)));
  EXPECT_FALSE(a.equal(Tensor()));
  // Byte-wise: identical NaNs are equal, +0 and -0 are not.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(Tensor::of<float>({nan}).equal(Tensor::of<float>({nan})));
  EXPECT_FALSE(Tensor::of<float>({0.0f}).equal(Tensor::of<float>({-0.0f})));
}

TEST(Tensor, Str) {
  EXPECT_EQ(Tensor::empty({2, 3}, DType::Float32).describe(), "float32[2, 3] on cpu");
  EXPECT_EQ(Tensor::empty({4}, DType::BFloat16, Device::cuda(1)).describe(),
            "bfloat16[4] on cuda:1");
  EXPECT_EQ(Tensor::empty({1, 1, 1}, DType::UInt8).describe(), "uint8[1, 1, 1] on cpu");
}

TEST(Device, StrAndValidation) {
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_EQ(Device::cuda().str(), "cuda:0");
  EXPECT_EQ(Device::cuda(7).str(), "cuda:7");
  EXPECT_TRUE(Device::cuda(2).is_cuda());
  EXPECT_FALSE(Device::cuda(2).is_cpu());
  EXPECT_NE(Device::cuda(0), Device::cuda(1));
  EXPECT_TRUE(contains(
      invalid_argument_message([] { (void)Tensor::empty({1}, DType::Int8, Device::cuda(-1)); }),
      "-1"));
  EXPECT_THROW((void)Tensor::empty({1}, DType::Int8, Device{Device::Type::CPU, 3}),
               InvalidArgument);
  EXPECT_THROW((void)Tensor::of<int8_t>({1}).to(Device::cuda(-2)), InvalidArgument);
}

TEST(Tensor, CudaTaggedTensorsKeepTheirDevice) {
  const Device gpu = Device::cuda(1);
  Tensor t = Tensor::from(std::vector<double>{1.0, 2.0, 3.0}, {3}, gpu);
  EXPECT_EQ(t.device(), gpu);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1.0, 2.0, 3.0}));
  EXPECT_EQ(Tensor::zeros({2}, DType::Int8, gpu).device(), gpu);

  Tensor c = t.clone();
  EXPECT_EQ(c.device(), gpu);
  EXPECT_NE(c.data_ptr(), t.data_ptr());

  Tensor same = t.to(gpu);  // a copy even when already there
  EXPECT_EQ(same.device(), gpu);
  EXPECT_NE(same.data_ptr(), t.data_ptr());

  Tensor host = t.to(Device::cpu());
  EXPECT_EQ(host.device(), Device::cpu());
  EXPECT_EQ(host.to_vector<double>(), (std::vector<double>{1.0, 2.0, 3.0}));
  Tensor other = host.to(Device::cuda(0));
  EXPECT_EQ(other.device(), Device::cuda(0));
  EXPECT_TRUE(other.equal(t));

  double buffer[2] = {7, 8};
  Tensor blob = Tensor::from_blob(buffer, {2}, DType::Float64, gpu);
  EXPECT_EQ(blob.device(), gpu);
  EXPECT_EQ(blob.clone().device(), gpu);

  Tensor dst = Tensor::zeros({3}, DType::Float64);
  dst.copy_(t);  // copy_ crosses devices and keeps the destination's
  EXPECT_EQ(dst.device(), Device::cpu());
  EXPECT_EQ(dst.to_vector<double>(), (std::vector<double>{1.0, 2.0, 3.0}));
}

// What a print of a tensor shows: its description and values, the ends of a long one; 16-bit
// floats as the doubles they hold (0.1 in bfloat16 is 0.10009765625).
TEST(Tensor, StrShowsTheValues) {
  EXPECT_EQ(Tensor::of<float>({0.5f, 1.0f, -2.0f}).str(), "float32[3] on cpu [0.5, 1, -2]");
  EXPECT_EQ(Tensor::of<int64_t>({int64_t{1} << 60}).str(),
            "int64[1] on cpu [1152921504606846976]");
  EXPECT_EQ(Tensor::of<bool>({true, false}).str(), "bool[2] on cpu [true, false]");
  EXPECT_EQ(Tensor::of<int8_t>({-3}).str(), "int8[1] on cpu [-3]");
  EXPECT_EQ(Tensor::of<bfloat16_t>({bfloat16_t(0.1f)}).str(), "bfloat16[1] on cpu [0.10009765625]");
  EXPECT_EQ(Tensor::of<float16_t>({float16_t(65504.0f)}).str(), "float16[1] on cpu [65504]");
  std::vector<int32_t> hundred(100);
  for (int i = 0; i < 100; ++i) hundred[static_cast<size_t>(i)] = i;
  EXPECT_EQ(Tensor::from(hundred).str(), "int32[100] on cpu [0, 1, 2, ..., 97, 98, 99]");
  std::vector<int32_t> six = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(Tensor::from(six).str(), "int32[6] on cpu [1, 2, 3, 4, 5, 6]");
}

TEST(Tensor, ToDoublesConvertsEveryDType) {
  EXPECT_EQ(Tensor::of<float16_t>({float16_t(1.5f), float16_t(-2.0f)}).to_doubles(),
            (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(Tensor::of<bfloat16_t>({bfloat16_t(0.1f)}).to_doubles(),
            (std::vector<double>{0.10009765625}));
  EXPECT_EQ(Tensor::of<uint8_t>({255}).to_doubles(), (std::vector<double>{255.0}));
  EXPECT_EQ(Tensor::of<bool>({true}).to_doubles(), (std::vector<double>{1.0}));
  EXPECT_EQ(Tensor().to_doubles(), (std::vector<double>{}));
}

}  // namespace
}  // namespace ranks
