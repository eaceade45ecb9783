#!/usr/bin/env python3
"""ctest: the simulator prices NCCL's collectives as the reference model does.

reports/cost_model/nccl_model.py is the cost model written once more, apart from the simulator's
C++ (sim/ranks/sim/nccl_tuner.cpp), from the same derivation (reports/cost_model/MODEL.md). Here
`ranks bench --sim` sweeps every op over sizes from 8 B to 1 GiB on layouts from one node to 16
nodes, and each row's virtual time, algorithm and protocol must be the reference's: the virtual
clock counts whole nanoseconds, nothing else differs.

usage: check_nccl_model.py RANKS WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reports",
                                "cost_model"))
import nccl_model  # noqa: E402

# (preset, ranks, ranks per node): one node, part of one, one rank per node (PAT), a full
# two-node and a sixteen-node job, and A100's Ampere rows.
LAYOUTS = [("h100-nvlink-ib", 8, 8), ("h100-nvlink-ib", 4, 4), ("h100-nvlink-ib", 4, 1),
           ("h100-nvlink-ib", 16, 8), ("h100-nvlink-ib", 128, 8), ("h100-nvlink-ib", 32, 2),
           ("a100-nvlink-ib", 8, 8), ("a100-nvlink-ib", 64, 8)]
# The reference prices reduce as broadcast and gather and scatter as all_to_all does.
AS_REFERENCE = {"reduce": "broadcast", "gather": "all_to_all", "scatter": "all_to_all"}
NAMES = {"Ring": "ring", "Tree": "tree", "NVLS": "nvls", "NVLSTree": "nvls_tree", "PAT": "pat",
         "P2P": "p2p"}


def main(ranks, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    compared = 0
    for preset, n, per_node in LAYOUTS:
        lines = os.path.join(work, f"{preset}-{n}-{per_node}.jsonl")
        subprocess.run([ranks, "bench", "--sim", "-n", str(n), "--ranks-per-node", str(per_node),
                        "--backend", "nccl", "--model", preset, "--shapes-only", "--",
                        "-o", "all", "-b", "8", "-e", "1G", "-f", "8", "-w", "0", "-n", "1",
                        "--json", lines], check=True, stdout=subprocess.DEVNULL)
        for row in map(json.loads, open(lines, encoding="utf-8")):
            op = AS_REFERENCE.get(row["op"], row["op"])
            if op not in nccl_model.OPS:
                assert "nccl_algorithm" not in row, row  # sendrecv keeps the links
                continue
            seconds, algorithm, protocol = nccl_model.predict(preset, op, n, n // per_node,
                                                              row["bytes"])
            want_us = seconds * 1e6
            where = f"{preset} {row['op']} n={n} per_node={per_node} bytes={row['bytes']}"
            assert abs(row["time_us"] - want_us) <= 1e-3 + 1e-9 * want_us, \
                (where, row["time_us"], want_us)
            assert (row["nccl_algorithm"], row["protocol"]) == (NAMES[algorithm], protocol), \
                (where, row["nccl_algorithm"], row["protocol"], algorithm, protocol)
            compared += 1
    assert compared > 400, compared
    print(f"check_nccl_model: {compared} rows priced as the reference model prices them")


if __name__ == "__main__":
    main(*sys.argv[1:])
