#include "mpirun.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace ranks::cli {

std::vector<std::string> mpirun_command(int world_size, const std::string& bind_to,
                                        const std::vector<std::string>& program, bool tag_output) {
  std::vector<std::string> argv = {"mpirun", "--oversubscribe",  "-np", std::to_string(world_size),
                                   "-x",     "RANKS_BACKEND=mpi"};
  if (geteuid() == 0) argv.insert(argv.begin() + 1, "--allow-run-as-root");
  if (tag_output) argv.insert(argv.begin() + 1, "--tag-output");
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

namespace {

// The number at the front of text, and what follows it; nullopt without one.
std::optional<std::pair<int, std::string_view>> leading_number(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return std::pair{value, text.substr(static_cast<size_t>(end - text.data()))};
}

}  // namespace

std::optional<TaggedLine> parse_tagged_line(const std::string& line) {
  // "[job,rank]<stdout>:" or "<stderr>:"; Open MPI 4 numbers the job 1.
  std::string_view rest(line);
  if (!rest.starts_with('[')) return std::nullopt;
  auto job = leading_number(rest.substr(1));
  if (!job || !job->second.starts_with(',')) return std::nullopt;
  auto rank = leading_number(job->second.substr(1));
  if (!rank) return std::nullopt;
  rest = rank->second;
  std::string_view stream;
  for (std::string_view candidate : {"]<stdout>:", "]<stderr>:"}) {
    if (rest.starts_with(candidate)) stream = candidate;
  }
  if (stream.empty()) return std::nullopt;
  // A line the rank wrote in pieces carries the tag again at each piece: keep the text only.
  const std::string tag(line, 0, line.size() - rest.size() + stream.size());
  std::string text(rest.substr(stream.size()));
  for (size_t at; (at = text.find(tag)) != std::string::npos;) text.erase(at, tag.size());
  return TaggedLine{rank->first, std::move(text)};
}

std::optional<MpirunFailure> parse_mpirun_failure(const std::deque<std::string>& lines) {
  constexpr std::string_view signalled = "mpirun noticed that process rank ";
  constexpr std::string_view improper = "mpirun has exited due to process rank ";
  constexpr std::string_view named = "Process name: [[";
  for (auto line = lines.begin(); line != lines.end(); ++line) {
    std::string_view text(*line);
    if (auto at = text.find(signalled); at != std::string_view::npos) {
      auto rank = leading_number(text.substr(at + signalled.size()));
      auto on = text.find("exited on signal ");
      if (!rank || on == std::string_view::npos) continue;
      std::string_view how = text.substr(on + std::string_view("exited on ").size());
      if (how.ends_with('.')) how.remove_suffix(1);
      return MpirunFailure{rank->first, "was killed by " + std::string(how)};
    }
    if (auto at = text.find(improper); at != std::string_view::npos) {
      if (auto rank = leading_number(text.substr(at + improper.size()))) {
        return MpirunFailure{rank->first, "exited without calling MPI_Finalize"};
      }
    }
    if (auto at = text.find(named); at != std::string_view::npos) {
      // "Process name: [[20373,1],1]", then "Exit code:    3" on the next line.
      std::string_view ids = text.substr(at + named.size());
      auto close = ids.find("],");
      if (close == std::string_view::npos) continue;
      auto rank = leading_number(ids.substr(close + 2));
      if (!rank) continue;
      std::string how = "exited with an error";
      if (auto next = std::next(line); next != lines.end()) {
        std::string_view code_line(*next);
        if (auto code_at = code_line.find("Exit code:"); code_at != std::string_view::npos) {
          std::string_view digits =
              code_line.substr(code_at + std::string_view("Exit code:").size());
          while (digits.starts_with(' ')) digits.remove_prefix(1);
          if (auto code = leading_number(digits))
            how = fmt::format("exited with status {}", code->first);
        }
      }
      return MpirunFailure{rank->first, how};
    }
  }
  return std::nullopt;
}

}  // namespace ranks::cli
