#include "mpirun.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace ranks::cli {

std::vector<std::string> mpirun_command(int world_size, const std::string& bind_to,
                                        const std::vector<std::string>& program) {
  std::vector<std::string> argv = {"mpirun", "--oversubscribe",  "-np", std::to_string(world_size),
                                   "-x",     "RANKS_BACKEND=mpi"};
  if (geteuid() == 0) argv.insert(argv.begin() + 1, "--allow-run-as-root");
  // More ranks than cores is normal here (4 ranks on a 2-core CI machine): mpirun refuses to
  // bind two processes to one core unless told it may.
  if (bind_to == "core") argv.insert(argv.end(), {"--bind-to", "core:overload-allowed"});
  if (bind_to == "none") argv.insert(argv.end(), {"--bind-to", "none"});
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

void exec_program(std::vector<std::string> argv) {
  std::vector<char*> raw;
  for (auto& s : argv) raw.push_back(s.data());
  raw.push_back(nullptr);
  std::fflush(nullptr);
  execvp(raw[0], raw.data());
  throw std::runtime_error(fmt::format("cannot run {}: {}", argv[0], std::strerror(errno)));
}

}  // namespace ranks::cli
