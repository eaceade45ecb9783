// A program that gives init_process_group a timeout of its own inside ranks::main: the world's
// ops must time out after it (2 s), not after the 30 minutes ranks::main started the world with.
// Rank 1 sleeps for an hour before the barrier rank 0 waits in.
//   ranks sim -n 2 -- own_timeout_probe            -> timeout, "timed out after 2 s"
//   ranks run -n 2 --backend gloo -- own_timeout_probe -> rank 0 times out after 2 s

#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    ranks::InitOptions options;
    options.timeout = std::chrono::seconds(2);
    ranks::init_process_group(options);
    if (ranks::get_rank() == 1) ranks::sleep_for(std::chrono::hours(1));
    ranks::barrier();
  });
}
