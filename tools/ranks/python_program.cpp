#include "python_program.hpp"

#include <filesystem>

namespace ranks::cli {

bool is_python(const std::string& program) {
  return std::filesystem::path(program).filename().string().starts_with("python");
}

std::vector<std::string> simulated_python_command(const std::vector<std::string>& program,
                                                  bool& changed) {
  changed = false;
  if (program.empty() || !is_python(program.front())) return program;
  size_t script = 1;
  while (script < program.size()) {
    const std::string& option = program[script];
    if (option == "-" || !option.starts_with("-")) break;
    if (option == "-c" || option == "-m" || option.starts_with("-c") ||
        option.starts_with("-m") || option == "--") {
      return program;  // not a script file: run as it is
    }
    // The interpreter's options that take a separate argument; the rest take none (-u, -O, -B,
    // -X dev written -Xdev, ...).
    script += option == "-X" || option == "-W" ? 2 : 1;
  }
  if (script >= program.size() || program[script] == "-") return program;
  std::vector<std::string> command(program.begin(), program.begin() + static_cast<long>(script));
  command.push_back("-m");
  command.push_back("ranks._simulate");
  command.insert(command.end(), program.begin() + static_cast<long>(script), program.end());
  changed = true;
  return command;
}

}  // namespace ranks::cli
