#!/usr/bin/env python3
"""ctest: `ranks calibrate --nccl` fits an NCCL system's physical figures to nccl-tests output.

The measurements are nccl-tests' own text output, written here for a system unlike the base
preset (NVLink links at 18 GB/s, 200 Gb/s NICs, slower software), priced by the reference model
written apart from the simulator (reports/cost_model/nccl_model.py). Calibrated from
h100-nvlink-ib, the model must then predict sizes and a layout it was not fitted to as that
system does, where the uncalibrated preset is far off. Output that does not say its op or its
ranks is refused by file and line.

usage: check_calibrate_nccl.py RANKS WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reports",
                                "cost_model"))
import nccl_model  # noqa: E402

TRUTH = dict(nccl_model.PRESETS["h100-nvlink-ib"], name="truth", nvlink_link_bw=18.0,
             nic_gbps=200, lat_scale=1.4, launch_us=3.0, fill_chunk_kib=64.0,
             p2p_nvlink_eff=0.8, p2p_net_eff=0.85)
PROGRAMS = {"all_reduce": "all_reduce_perf", "all_gather": "all_gather_perf",
            "reduce_scatter": "reduce_scatter_perf", "broadcast": "broadcast_perf",
            "all_to_all": "alltoall_perf"}
SIZES = [1 << k for k in range(3, 34, 2)]  # 8 B to 8 GiB


def nccl_tests_output(op, nranks, nnodes, sizes):
    """nccl-tests' text for one test, times from the truth (both columns the same)."""
    per_node = nranks // nnodes
    lines = ["# nccl-tests version 2.17.6 nccl-headers=23007 nccl-library=23007",
             f"# Collective test starting: {PROGRAMS[op]}",
             "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 4(factor) warmup iters: 5 "
             "iters: 20 agg iters: 1 validation: 1 graph: 0",
             "#", "# Using devices"]
    for r in range(nranks):
        lines.append(f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on node-{r // per_node:03d} "
                     f"device {r % per_node:2d} [0000:1b:00] NVIDIA H100 80GB HBM3")
    lines += ["#", "#                                                              out-of-place     "
              "                  in-place", "#       size         count      type   redop    root "
              "    time   algbw   busbw #wrong     time   algbw   busbw #wrong"]
    for size in sizes:
        if op in ("all_gather", "reduce_scatter", "all_to_all") and size < 4 * nranks:
            continue
        seconds, _, _ = nccl_model.predict(TRUTH, op, nranks, nnodes, size)
        us = seconds * 1e6
        algbw = size / us / 1e3
        lines.append(f"{size:12d} {size // 4:13d}     float     sum      -1 {us:8.2f} "
                     f"{algbw:7.2f} {algbw:7.2f}      0 {us:8.2f} {algbw:7.2f} {algbw:7.2f}      0")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0", "#", ""]
    # A library's warning between the lines is not data.
    lines.insert(3, "NCCL WARN some note a library printed")
    return "\n".join(lines)


def main(ranks, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    layouts = [(8, 1), (4, 1), (16, 2), (64, 8), (2, 2)]
    logs = []
    for nranks, nnodes in layouts:
        path = os.path.join(work, f"nccl-tests-{nranks}x{nnodes}.txt")
        with open(path, "w") as f:
            for op in PROGRAMS:
                f.write(nccl_tests_output(op, nranks, nnodes, SIZES))
        logs.append(path)
    model_path = os.path.join(work, "fitted.json")
    done = subprocess.run([ranks, "calibrate", *logs, "--nccl", "h100-nvlink-ib", "--name",
                           "fitted", "-o", model_path], capture_output=True, text=True)
    print(done.stderr)
    assert done.returncode == 0, done.stderr
    assert "held out of the fit" in done.stderr, done.stderr
    model = json.load(open(model_path))
    assert model["name"] == "fitted" and model["backend"] == "nccl", model
    assert any("ranks calibrate --nccl h100-nvlink-ib" in s for s in model["sources"]), model

    # Judged on what it never saw: sizes between the fitted ones, and 32 ranks on 4 nodes.
    fitted = model["nccl"]
    checks, worst, preset_worst = 0, 1.0, 1.0
    for op in PROGRAMS:
        for nranks, nnodes in [(32, 4), (8, 1), (16, 2)]:
            for k in range(4, 33, 2):
                size = 1 << k
                if op in ("all_gather", "reduce_scatter", "all_to_all") and size < 4 * nranks:
                    continue
                truth, _, _ = nccl_model.predict(TRUTH, op, nranks, nnodes, size)
                sim = predicted_us(ranks, work, model_path, op, nranks, nnodes, size) \
                    if (op, nranks, k) == ("all_reduce", 32, 20) else None
                mine, _, _ = nccl_model.predict(as_reference(fitted), op, nranks, nnodes, size)
                preset, _, _ = nccl_model.predict("h100-nvlink-ib", op, nranks, nnodes, size)
                worst = max(worst, mine / truth, truth / mine)
                preset_worst = max(preset_worst, preset / truth, truth / preset)
                if sim is not None:
                    assert abs(sim - mine * 1e6) <= 1e-3 + 1e-6 * sim, (sim, mine)
                checks += 1
    print(f"held-out predictions: worst ratio {worst:.3f} over {checks} (uncalibrated preset: "
          f"{preset_worst:.3f})")
    assert worst < 1.10, worst
    assert preset_worst > 1.5, preset_worst

    # Output that cannot be read as measurements is refused, naming the file and line.
    bare = os.path.join(work, "bare.txt")
    text = nccl_tests_output("all_reduce", 8, 1, SIZES[:3])
    with open(bare, "w") as f:
        f.write(text.replace("# Collective test starting: all_reduce_perf\n", ""))
    done = subprocess.run([ranks, "calibrate", bare, "--nccl", "h100-nvlink-ib"],
                          capture_output=True, text=True)
    assert done.returncode != 0 and f"{bare}:" in done.stderr and "--op" in done.stderr, done
    done = subprocess.run([ranks, "calibrate", bare, "--nccl", "h100-nvlink-ib", "--op",
                           "all_reduce", "-o", os.path.join(work, "bare.json")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open(bare, "w") as f:
        f.write("\n".join(l for l in text.splitlines() if "Rank" not in l) + "\n")
    done = subprocess.run([ranks, "calibrate", bare, "--nccl", "h100-nvlink-ib"],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "Rank N" in done.stderr, done
    done = subprocess.run([ranks, "calibrate", logs[0], "--nccl", "pcie-gen5-ib"],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "has no NCCL system" in done.stderr, done
    print("check_calibrate_nccl: ok")


def as_reference(fitted):
    """The fitted model file's nccl object as the reference model's preset."""
    return dict(nccl_model.PRESETS["h100-nvlink-ib"], name="fitted",
                nvlink_link_bw=fitted["nvlink_link_GBps"], nic_gbps=fitted["nic_Gbps"],
                lat_scale=fitted["latency_scale"], launch_us=fitted["launch_us"],
                fill_chunk_kib=fitted["fill_chunk_KiB"],
                p2p_nvlink_eff=fitted["p2p_nvlink_efficiency"],
                p2p_net_eff=fitted["p2p_net_efficiency"])


def predicted_us(ranks, work, model_path, op, nranks, nnodes, size):
    """The simulator's time for one op under the fitted model file."""
    lines = os.path.join(work, "sim.jsonl")
    if os.path.exists(lines):
        os.remove(lines)
    subprocess.run([ranks, "bench", "--sim", "-n", str(nranks), "--ranks-per-node",
                    str(nranks // nnodes), "--backend", "nccl", "--model", model_path,
                    "--shapes-only", "--", "-o", op, "-b", str(size), "-e", str(size), "-w", "0",
                    "-n", "1", "--json", lines], check=True, stdout=subprocess.DEVNULL)
    return json.loads(open(lines).readline())["time_us"]


if __name__ == "__main__":
    main(*sys.argv[1:])
