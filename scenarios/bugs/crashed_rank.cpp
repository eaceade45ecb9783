// A crashed rank. Simulated, with a fault: rank 2 dies as it enters its third op. For real,
// CRASH_RANK=R makes rank R abort() before its third all_reduce, FAIL_RANK=R makes it throw
// instead (the others then name its error as the job's first failure), EXIT_RANK=R makes it
// call exit(3), STALL_RANK=R makes it sleep there for an hour (a hung rank, for launcher
// tests), RETURN_RANK=R makes it return from its body there (a rank that leaves early), and
// THROW_RANK=R makes it `throw 42` (not a std::exception), FREEZE_RANK=R stops its process
// there (SIGSTOP: a frozen rank, the store's host when R is 0); HOLD_UNTIL=PATH makes rank 0 wait
// there until the file PATH exists (a healthy job that runs until a launcher test lets it end).
// Under nccl the survivors wait in their all_reduce until the watchdog timeout; under gloo and mpi
// they see the dead peer at once (RankFailure). Either way the report says rank 2 failed first, and
// where.
//   ranks sim -n 4 --fault crash:rank=2,op=3 -- bug_crashed_rank                 -> crash
//   ranks sim -n 4 --backend gloo --fault crash:rank=2,op=3 -- bug_crashed_rank  -> crash

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ranks/ranks.hpp>

int main(int argc, char** argv) {
  return ranks::main(argc, argv, [] {
    auto grads = ranks::Tensor::of<float>({1.0f, 2.0f}, ranks::comm_device());
    const char* crash_rank = std::getenv("CRASH_RANK");
    const char* fail_rank = std::getenv("FAIL_RANK");
    const char* exit_rank = std::getenv("EXIT_RANK");
    const char* stall_rank = std::getenv("STALL_RANK");
    const char* return_rank = std::getenv("RETURN_RANK");
    const char* throw_rank = std::getenv("THROW_RANK");
    const char* hold_until = std::getenv("HOLD_UNTIL");
    const char* freeze_rank = std::getenv("FREEZE_RANK");
    for (int step = 0; step < 5; ++step) {
      if (step == 2 && crash_rank && std::atoi(crash_rank) == ranks::get_rank()) std::abort();
      if (step == 2 && exit_rank && std::atoi(exit_rank) == ranks::get_rank()) std::exit(3);
      if (step == 2 && stall_rank && std::atoi(stall_rank) == ranks::get_rank()) {
        ranks::sleep_for(std::chrono::hours(1));
      }
      while (step == 2 && hold_until && ranks::get_rank() == 0 &&
             !std::filesystem::exists(hold_until)) {
        ranks::sleep_for(std::chrono::milliseconds(50));
      }
      if (step == 2 && freeze_rank && std::atoi(freeze_rank) == ranks::get_rank()) {
        std::raise(SIGSTOP);
      }
      if (step == 2 && return_rank && std::atoi(return_rank) == ranks::get_rank()) return;
      if (step == 2 && throw_rank && std::atoi(throw_rank) == ranks::get_rank()) throw 42;
      if (step == 2 && fail_rank && std::atoi(fail_rank) == ranks::get_rank()) {
        throw ranks::InvalidArgument("the data loader ran out of batches");
      }
      ranks::all_reduce(grads);  // @where:step
      // What a rank printed before another died must not be lost with the shared process.
      // Flushed: launcher tests wait for this line before they stop a node.
      if (step == 0) {
        std::printf("rank %d: step 0 done\n", ranks::get_rank());
        std::fflush(stdout);
      }
    }
  });
}
