#pragma once
// The entry point that lets one binary run three ways.

#include <functional>

namespace ranks {

// Runs body the way the environment asks:
//   under `ranks sim -n N`: N simulated ranks in this process, then prints the report;
//   under `ranks run`, torchrun-style variables, srun or mpirun: initialises the real backend
//   (RANKS_BACKEND, RANKS_TIMEOUT in seconds) and runs body once;
//   otherwise: once, not distributed (world size 1, rank 0).
// Returns 0 when every rank's body returned normally, non-zero otherwise (after printing why).
int main(int argc, char** argv, const std::function<void()>& body);

}  // namespace ranks
