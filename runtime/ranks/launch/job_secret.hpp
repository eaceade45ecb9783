#pragma once
// The secret a job's rendezvous store checks before a client may read or write anything. Every
// process of the job must present the same one:
//   RANKS_STORE_TOKEN        the secret itself (`ranks run` sets it for its ranks, fresh per job);
//   RANKS_STORE_TOKEN_FILE   a file holding it, which only its owner may read (mode 0600 or
//                            0400, owned by this user, not a link): how torchrun, srun and
//                            mpirun jobs, or several `ranks run --nnodes` launchers, share one.
// With neither, the store has no secret, and rank 0 says so once.

#include <chrono>
#include <optional>
#include <string>

#include "ranks/launch/env.hpp"

namespace ranks::launch {

inline constexpr const char* kStoreTokenVariable = "RANKS_STORE_TOKEN";
inline constexpr const char* kStoreTokenFileVariable = "RANKS_STORE_TOKEN_FILE";

// The job's secret from env (the variable first, then the file); nullopt when neither is set.
// RendezvousError for a file that is missing, readable by others, not the user's, a link,
// empty or longer than a store token may be.
std::optional<std::string> job_secret(const Env& env);

// A fresh secret: 32 random bytes from the kernel, as 64 hex digits.
std::string new_job_secret();

// How the launchers of a multi-node job share a secret through a file every node sees (a shared
// home or scratch directory), named by RANKS_STORE_TOKEN_FILE: node 0's launcher writes a fresh
// one there when the file does not exist yet (mode 0600, whole or not at all), the others wait
// for it. A file that exists already is the job's as it is, written by the user or an earlier
// job. The secret never crosses the network in the clear.
std::string make_job_secret_file(const std::string& path);
// RendezvousError once `within` has passed without the file; the checks of job_secret otherwise.
std::string await_job_secret_file(const std::string& path, std::chrono::milliseconds within);

}  // namespace ranks::launch
