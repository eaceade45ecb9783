// TensorList (the tensors of an op request: one inline, more on the heap) and the shape that
// copies of a Tensor share.

#include <gtest/gtest.h>

#include <ranks/op.hpp>
#include <vector>

namespace {

using ranks::DType;
using ranks::Tensor;
using ranks::TensorList;

// Tensors told apart by their first element.
std::vector<Tensor> numbered(int count) {
  std::vector<Tensor> tensors;
  for (int i = 0; i < count; ++i) tensors.push_back(Tensor::of<int32_t>({i, -i}));
  return tensors;
}

std::vector<int32_t> firsts(const TensorList& list) {
  std::vector<int32_t> out;
  for (const Tensor& t : list) out.push_back(t.data<int32_t>()[0]);
  return out;
}

TEST(TensorList, KeepsOrderAcrossTheSwitchFromInlineToHeap) {
  TensorList list;
  EXPECT_TRUE(list.empty());
  for (const Tensor& t : numbered(5)) list.push_back(t);
  ASSERT_EQ(list.size(), 5u);
  EXPECT_EQ(firsts(list), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(list.front().data<int32_t>()[0], 0);
  EXPECT_EQ(list[3].data<int32_t>()[1], -3);
}

TEST(TensorList, AssignsEveryLengthAndCopiesShareMemory) {
  const auto source = numbered(3);
  for (int n : {0, 1, 3, 1, 0, 2}) {
    TensorList list(source.begin(), source.begin() + n);
    ASSERT_EQ(list.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) EXPECT_EQ(list[i].data_ptr(), source[i].data_ptr());
  }
  TensorList reused{source[2]};
  reused.assign(source.begin(), source.end());
  EXPECT_EQ(firsts(reused), (std::vector<int32_t>{0, 1, 2}));
  reused.assign(source.begin() + 1, source.begin() + 2);
  EXPECT_EQ(firsts(reused), (std::vector<int32_t>{1}));
  reused.push_back(source[0]);
  EXPECT_EQ(firsts(reused), (std::vector<int32_t>{1, 0}));
}

TEST(TensorList, CopyAndMoveLeaveTheRightContents) {
  for (int n : {0, 1, 4}) {
    const auto source = numbered(n);
    TensorList original(source.begin(), source.end());
    TensorList copy = original;
    EXPECT_EQ(firsts(copy), firsts(original));
    TensorList moved = std::move(original);
    EXPECT_EQ(firsts(moved), firsts(copy));
    EXPECT_TRUE(original.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
    TensorList target{Tensor::of<int32_t>({9})};
    target = std::move(moved);
    EXPECT_EQ(firsts(target), firsts(copy));
    target = copy;
    EXPECT_EQ(firsts(target), firsts(copy));
  }
}

TEST(TensorList, ClearedListsRefillAndMayPushTheirOwnElements) {
  const auto source = numbered(3);
  TensorList list(source.begin(), source.end());
  list.clear();
  EXPECT_TRUE(list.empty());
  list.push_back(source[2]);  // inline again, with the emptied heap part still allocated
  list.push_back(list[0]);    // a copy of its own element, while it moves to the heap
  list.push_back(list[1]);
  EXPECT_EQ(firsts(list), (std::vector<int32_t>{2, 2, 2}));
  TensorList moved = std::move(list);
  moved.push_back(source[1]);
  EXPECT_EQ(firsts(moved), (std::vector<int32_t>{2, 2, 2, 1}));
  list = std::move(moved);  // NOLINT(bugprone-use-after-move): assigning revives it
  EXPECT_EQ(list.size(), 4u);
}

TEST(TensorShape, CopiesShareTheShapeAndUndefinedTensorsHaveNone) {
  Tensor t = Tensor::zeros({2, 3}, DType::Float32);
  Tensor copy = t;
  EXPECT_EQ(&copy.shape(), &t.shape());
  EXPECT_EQ(copy.shape(), (std::vector<int64_t>{2, 3}));
  Tensor moved_to = t.to(ranks::Device::cpu());
  EXPECT_EQ(moved_to.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_NE(moved_to.data_ptr(), t.data_ptr());
  Tensor undefined;
  EXPECT_TRUE(undefined.shape().empty());
  EXPECT_EQ(undefined.dim(), 0);
  EXPECT_EQ(t.dim(), 2);
}

}  // namespace
