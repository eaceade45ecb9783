#pragma once
// A Python program under `ranks sim`: the interpreter starts the package's entry module,
// ranks._simulate, which runs the script from its first line on every simulated rank (as torchrun
// runs it once per process), whether it is written on ranks.dist or on torch.distributed.

#include <string>
#include <vector>

namespace ranks::cli {

// A Python interpreter (python, python3, python3.11, a virtual environment's).
bool is_python(const std::string& program);

// `python [interpreter options] script.py args` as `python [interpreter options] -m
// ranks._simulate script.py args`; other command lines (-c, -m, a script on stdin, not Python)
// unchanged. Whether it changed is `changed`.
std::vector<std::string> simulated_python_command(const std::vector<std::string>& program,
                                                  bool& changed);

}  // namespace ranks::cli
