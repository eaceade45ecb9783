// Bug: the ranks wait for rank 0 by polling for a file it writes after its first collective,
// sleeping between looks, instead of calling a collective with it. For real, rank 0 waits in the
// barrier for ranks that wait for its file: everyone times out. Simulated, the polling rank never
// hands the one thread back, so after the timeout of real time the run ends with a report that
// names it, rather than hanging.
//   ranks sim -n 3 --timeout 1 -- bug_file_handshake  -> timeout: rank 1 has not handed the ...

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <ranks/ranks.hpp>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  // One name per process: no earlier run's file can be found by this one.
  const std::filesystem::path ready =
      std::filesystem::temp_directory_path() /
      ("bug_file_handshake." + std::to_string(::getpid()) + ".ready");
  return ranks::main(argc, argv, [&] {
    if (ranks::get_rank() == 0) {
      ranks::barrier();  // @where:barrier
      std::ofstream(ready) << "go\n";
      return;
    }
    while (!std::filesystem::exists(ready)) {  // the bug: a wait ranks cannot see
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ranks::barrier();
  });
}
