#pragma once
// Fault specs (`ranks sim --fault`), parsed once into data the engine checks:
//   crash:rank=R,op=K          rank R dies as it enters its K-th operation (K counts from 1)
//   crash:rank=R,at=SECONDS    rank R dies at that virtual time (wherever it is waiting)
//   delay:rank=R,op=K,by=SECONDS   rank R stalls that long before its K-th operation

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ranks::sim::detail {

struct Fault {
  enum class Kind { CrashAtOp, CrashAtTime, DelayAtOp };
  Kind kind;
  int rank = 0;
  int64_t op = 0;                  // CrashAtOp, DelayAtOp
  std::chrono::nanoseconds at{0};  // CrashAtTime
  std::chrono::nanoseconds by{0};  // DelayAtOp
  std::string spec;                // as written, for reports
};

// InvalidArgument naming the spec and what is wrong with it.
std::vector<Fault> parse_faults(const std::vector<std::string>& specs, int world_size);

// What a crashed rank's fiber unwinds with. Deliberately not a std::exception, so that a body's
// catch (const std::exception&) cannot swallow a crash (a real process would be gone).
struct CrashUnwind {};

}  // namespace ranks::sim::detail
