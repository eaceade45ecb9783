#pragma once
// The rendezvous port of a SLURM job that sets no MASTER_PORT. MMEngine uses 29500 for every job,
// so two jobs sharing a node collide (mmengine #169); deriving the port from the job id lets
// them coexist with nothing to configure.

#include <cstdint>

namespace ranks::launch {

// Derived ports lie in 12000..31999: below Linux's default ephemeral range (32768..60999), so
// the kernel never hands one to an outgoing connection, and wide enough that any two job ids
// less than 20000 apart (jobs submitted close together) get different ports.
inline constexpr int kSlurmPortBase = 12000;
inline constexpr int kSlurmPortSpan = 20000;

constexpr int slurm_job_port(uint64_t job_id) {
  return kSlurmPortBase + static_cast<int>(job_id % kSlurmPortSpan);
}

}  // namespace ranks::launch
