// Built-in cost models for hardware nobody here can rent. Every figure names its source
// (../shared/research/anchors.md collects them); "derived" marks our arithmetic on a published
// figure, "assumed" a figure we could not source. Calibrate against measurements when you can.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

#include "ranks/errors.hpp"
#include "ranks/sim/cost_model.hpp"

namespace ranks::sim {

namespace {

constexpr std::array<std::string_view, 4> names = {"free", "h100-nvlink-ib", "pcie-gen5-ib",
                                                   "ethernet-40g"};

constexpr double us = 1e-6;
constexpr double GBps = 1e9;

// NCCL ring busbw on 8xH100 SXM is 365-370 GB/s for 2-8 GPUs (NVIDIA/nccl#1455; sjeaugey in
// NVIDIA/nccl-tests#212: NVLink4 line rate 450 GB/s per direction, ~20% protocol overhead).
// Small all-reduce on 2xH100 takes ~6 us (NVIDIA/nccl#1259), two ring steps: alpha ~3 us
// (derived). Between nodes: one 400 Gb/s NDR port per GPU = 50 GB/s per direction
// (ConnectX-7); 2 nodes x 8 GPUs take 46-48 us for a 4 B-1 KiB tree all-reduce
// (NVIDIA/nccl#1244), four tree steps: alpha ~12 us (derived).
Link constexpr h100_nvlink{3.0 * us, 370 * GBps};
Link constexpr ndr_ib{12.0 * us, 50 * GBps};

// PCIe Gen5 x16: 32 GT/s x 16 lanes, 128b/130b = ~63 GB/s per direction (line rate; NCCL will
// see less). The 5 us step latency through the host bridge is assumed, not sourced.
Link constexpr pcie_gen5{5.0 * us, 63 * GBps};

// Gloo's published allreduce_ring_chunked on 4 machines over 40GbE (facebookincubator/gloo
// docs/benchmark.md): 1 float p50 263 us over 6 ring steps = ~44 us per step (derived; the
// loopback TCP hop here is 46 us, shared/anchors); 20 MB in 10.6 ms = 2.8 GB/s busbw (derived).
// Within a node: Open MPI shared memory, 0.35 us (open-mpi/ompi#7784) and this machine's
// 8.9 GB/s single-thread memcpy (shared/anchors).
Link constexpr tcp_40g{44.0 * us, 2.8 * GBps};
Link constexpr shared_memory{0.35 * us, 8.9 * GBps};

CostModel make(std::string name, std::string description, Link intra, Link inter,
               std::vector<std::string> sources) {
  CostModel model;
  model.name = std::move(name);
  model.description = std::move(description);
  model.intra = intra;
  model.inter = inter;
  model.sources = std::move(sources);
  return model;
}

}  // namespace

std::span<const std::string_view> cost_model_presets() { return names; }

CostModel cost_model_preset(std::string_view name) {
  if (name == "free") return CostModel{};
  if (name == "h100-nvlink-ib") {
    CostModel model =
        make("h100-nvlink-ib", "HGX H100: 8 GPUs on NVLink4/NVSwitch, one 400 Gb/s NDR port each",
             h100_nvlink, ndr_ib,
             {"NVIDIA/nccl#1455 (ring busbw 365-370 GB/s)", "NVIDIA/nccl-tests#212",
              "NVIDIA/nccl#1259 (6 us small all-reduce)", "NVIDIA/nccl#1244 (46-48 us, 2 nodes)",
              "ConnectX-7 NDR 400 Gb/s; 8 rails: 400 GB/s per node per direction"});
    // Between nodes NCCL runs one channel per rail: each ring or tree leaves the node through
    // its own GPU's port, so a step of a group with 8 members per node has the node's 8 ports
    // (400 GB/s) and is bound by NVLink's 370 GB/s, not one port's 50; a group with one member
    // per node (data parallel across nodes) has one port. A message, and all_to_all's traffic,
    // leaves through its sender's own port: those keep the 50 GB/s link.
    model.inter_rails = 8;
    // NCCL gathers and reduce-scatters around rings (its tree is for all_reduce): left to pick,
    // the model would take recursive doubling, lg n steps where NCCL takes n - 1.
    model.ops["all_gather"].algorithm = Algorithm::Ring;
    model.ops["reduce_scatter"].algorithm = Algorithm::Ring;
    return model;
  }
  if (name == "pcie-gen5-ib") {
    return make("pcie-gen5-ib", "GPUs on PCIe Gen5 x16 within a node, 400 Gb/s NDR between nodes",
                pcie_gen5, ndr_ib,
                {"PCIe Gen5 x16 line rate (63 GB/s per direction)", "alpha_intra assumed",
                 "ConnectX-7 NDR 400 Gb/s", "NVIDIA/nccl#1244"});
  }
  if (name == "ethernet-40g") {
    return make("ethernet-40g", "CPU nodes on 40 Gb Ethernet (gloo over TCP), shared memory within",
                shared_memory, tcp_40g,
                {"facebookincubator/gloo docs/benchmark.md (4 x 40GbE)",
                 "open-mpi/ompi#7784 (0.35 us shm)", "shared/anchors memcpy 8.9 GB/s"});
  }
  throw InvalidArgument(
      fmt::format("cost model preset '{}' is not one of {}", name, fmt::join(names, ", ")));
}

}  // namespace ranks::sim
