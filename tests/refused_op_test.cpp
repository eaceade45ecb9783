// An op a backend refuses after the front end has built its request (in Backend::draft(): the
// simulator's is the pooled record the op would have kept) leaves nothing of it to the group's
// next op, in the simulator under each backend's rules and on the real backend.

#include "harness.hpp"

namespace ranks::testing {
namespace {

class RefusedOp : public ::testing::TestWithParam<std::string> {};

TEST_P(RefusedOp, LeavesNothingToTheNextOp) {
  const std::string rules = rules_of(GetParam());  // GetParam(): a rule_cases() case
  auto body = [rules] {
    // Both are refused by the backend's table, which dispatch asks once the request carries its
    // tensors: gloo has no reduce_scatter of cuda tensors, Open MPI no cuda tensors at all.
    Tensor out = Tensor::zeros({2}, DType::Int32);
    if (rules == "gloo") {
      Tensor gpu_out = Tensor::zeros({2}, DType::Int32, Device::cuda(0));
      std::vector<Tensor> in(static_cast<size_t>(get_world_size()),
                             Tensor::of<int32_t>({1, 1}, Device::cuda(0)));
      EXPECT_THROW(reduce_scatter(gpu_out, in), Unsupported);
    } else {
      Tensor on_gpu = Tensor::of<int32_t>({1, 1}, Device::cuda(0));
      EXPECT_THROW(all_reduce(on_gpu), Unsupported);
    }
    // A request with the refused op's tensors or root still in it would broadcast the wrong
    // tensor from the wrong rank.
    const int root = get_world_size() - 1;
    Tensor b = get_rank() == root ? Tensor::of<int32_t>({7, 8}) : Tensor::zeros({2}, DType::Int32);
    broadcast(b, root);
    EXPECT_EQ(values(b), (std::vector<double>{7, 8}));
    Tensor sum = Tensor::of<int32_t>({get_rank() + 1});
    all_reduce(sum);
    EXPECT_EQ(sum.item<int32_t>(), get_world_size() * (get_world_size() + 1) / 2);
    EXPECT_EQ(values(out), (std::vector<double>{0, 0}));  // the refused op wrote nothing
  };
  run_rule_case(GetParam(), 3, body);
}

INSTANTIATE_TEST_SUITE_P(Backends, RefusedOp, ::testing::ValuesIn(rule_cases()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace ranks::testing
