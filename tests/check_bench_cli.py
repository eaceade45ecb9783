#!/usr/bin/env python3
"""ctest: `ranks bench --sim` runs ranks-bench on simulated ranks under a preset cost model:
every op reports, #wrong is 0, and the virtual clock gives times that grow with size.

usage: check_bench_cli.py RANKS WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reports",
                                "cost_model"))
import nccl_model  # noqa: E402


def main(ranks, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    lines = os.path.join(work, "sim.jsonl")
    subprocess.run([ranks, "bench", "--sim", "-n", "8", "--ranks-per-node", "4", "--backend",
                    "mpi", "--model", "h100-nvlink-ib", "--", "-o", "all", "-b", "64", "-e",
                    "64K", "-f", "4", "-w", "1", "-n", "2", "--json", lines], check=True)
    rows = [json.loads(l) for l in open(lines, encoding="utf-8")]
    ops = {r["op"] for r in rows}
    assert ops == {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                   "all_to_all", "sendrecv"}, ops
    for r in rows:
        assert r["wrong"] == 0, r
        assert r["backend"] == "sim" and r["model"] == "h100-nvlink-ib", r
        assert r["world_size"] == 8 and r["ranks_per_node"] == 4, r
        assert r["time_us"] > 0, r
    for op in ops:
        times = [r["time_us"] for r in sorted((r for r in rows if r["op"] == op),
                                               key=lambda r: r["bytes"])]
        assert times == sorted(times), (op, times)
    # Shapes only: 1,024 ranks of 1 GiB each cost address space, not memory; nothing checked.
    big = os.path.join(work, "big.jsonl")
    subprocess.run([ranks, "bench", "--sim", "-n", "1024", "--ranks-per-node", "8",
                    "--model", "h100-nvlink-ib", "--shapes-only", "--", "-o", "all_reduce",
                    "-b", "1M", "-e", "1G", "-f", "32", "-w", "0", "-n", "1", "--json", big],
                   check=True)
    rows = [json.loads(l) for l in open(big, encoding="utf-8")]
    assert [r["bytes"] for r in rows] == [1 << 20, 1 << 25, 1 << 30], rows
    assert all(r["wrong"] == -1 and r["world_size"] == 1024 for r in rows), rows
    # 128 nodes of 8: priced as NCCL's tuner on 128 HGX H100 nodes prices it, by the reference
    # model written apart from the simulator's (reports/cost_model/nccl_model.py).
    seconds, algorithm, protocol = nccl_model.predict("h100-nvlink-ib", "all_reduce", 1024, 128,
                                                      1 << 30)
    assert abs(rows[-1]["time_us"] - seconds * 1e6) < 1e-2, (rows[-1], seconds)
    assert (rows[-1]["nccl_algorithm"], rows[-1]["protocol"]) == ("nvls_tree", "Simple"), rows[-1]
    assert (algorithm, protocol) == ("NVLSTree", "Simple"), (algorithm, protocol)
    # Without --model a simulated bench still predicts (the emulated backend's preset), and the
    # footer says every value was right.
    done = subprocess.run([ranks, "bench", "--sim", "-n", "4", "--backend", "gloo", "--", "-o",
                           "all_reduce", "-b", "1K", "-e", "4K", "-n", "1", "-w", "0"],
                          check=True, capture_output=True, text=True)
    table = [l.split() for l in done.stdout.splitlines() if l.split() and l.split()[0].isdigit()]
    assert table and all(float(row[4]) > 0 for row in table), done.stdout
    assert "model ethernet-40g" in done.stdout, done.stdout
    assert "# Out of bounds values : 0 OK" in done.stdout, done.stdout
    # Measured on gloo: the same table, without `ranks run`'s "[rank k] " in front.
    done = subprocess.run([ranks, "bench", "-n", "2", "--backend", "gloo", "--", "-o",
                           "all_reduce", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0"],
                          check=True, capture_output=True, text=True)
    assert done.stdout.startswith("# ranks bench: all_reduce, backend gloo"), done.stdout
    assert not any(l.startswith("[rank") for l in done.stdout.splitlines()), done.stdout
    assert "# Out of bounds values : 0 OK" in done.stdout, done.stdout
    # Nothing to calibrate from: a clear error, not an empty model.
    empty = os.path.join(work, "empty.jsonl")
    open(empty, "w").close()
    done = subprocess.run([ranks, "calibrate", empty, "-o", os.path.join(work, "m.json")],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "no measurements of a real backend" in done.stderr, done
    # A malformed row is named by file and line, by calibrate and report alike.
    bad = os.path.join(work, "bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"backend": "gloo", "world_size": 2, "op": "all_reduce", "bytes": 8, '
                '"time_us": "abc"}\n')
    for command in (["calibrate", bad], ["report", bad, "-o", os.path.join(work, "report")]):
        done = subprocess.run([ranks, *command], capture_output=True, text=True)
        assert done.returncode != 0, done
        assert f'{bad}:1: not a ranks-bench JSON line: "time_us" is not a number' in done.stderr, \
            done.stderr
    # Values a reader would take silently are refused with file and line: a world size of 2.5,
    # a negative size, an op no model prices, a ranks_per_node of null.
    for field, value, said in (("world_size", "2.5", '"world_size" must be a whole number >= 1'),
                               ("bytes", "-8", '"bytes" must be >= 0'),
                               ("op", '"alltoallv"', "\"op\" 'alltoallv' is not one of"),
                               ("ranks_per_node", "null", '"ranks_per_node" must be a whole')):
        row = {"backend": "gloo", "world_size": 2, "op": "all_reduce", "bytes": 8, "time_us": 3}
        with open(bad, "w") as f:
            f.write(json.dumps(row)[:-1] + f', "{field}_": 0' + "}\n")  # a valid first line
            row_text = json.dumps(row)
            row_text = row_text.replace(f'"{field}": {json.dumps(row.get(field))}',
                                        f'"{field}": {value}') if field in row else \
                row_text[:-1] + f', "{field}": {value}' + "}"
            f.write(row_text + "\n")
        done = subprocess.run([ranks, "calibrate", bad], capture_output=True, text=True)
        assert done.returncode != 0 and f"{bad}:2: " in done.stderr and said in done.stderr, \
            (field, done.stderr)
    # Rows of one rank are left out of a fit, with a note (the simulator prices them at 0).
    with open(bad, "w") as f:
        for n, us in ((1, 50.0), (2, 80.0), (4, 160.0)):
            for size in (1024, 4096, 16384):
                f.write(json.dumps({"backend": "gloo", "world_size": n, "op": "all_reduce",
                                    "bytes": size, "time_us": us + size / 1e3}) + "\n")
    done = subprocess.run([ranks, "calibrate", bad, "-o", os.path.join(work, "m.json")],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "left out 3 rows of world size 1" in done.stderr, done.stderr
    assert "all_reduce           1" not in done.stderr, done.stderr
    # A directory is not a results file.
    done = subprocess.run([ranks, "calibrate", work], capture_output=True, text=True)
    assert done.returncode != 0 and "is a directory" in done.stderr, done.stderr
    # Options the chosen mode would ignore are refused.
    for args in (["--model", "h100-nvlink-ib"], ["--ranks-per-node", "2"], ["--shapes-only"]):
        done = subprocess.run([ranks, "bench", "-n", "2", *args, "--", "-e", "8"],
                              capture_output=True, text=True)
        assert done.returncode == 2 and "are for simulated runs" in done.stderr, (args, done)
    done = subprocess.run([ranks, "bench", "--sim", "--bind-to", "core", "--", "-e", "8"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "--bind-to is for measured runs" in done.stderr, done
    # nccl-tests' -o (reduce op) and -r (root) are ranks bench's -r and root 0: the error says so.
    for args, said in ((["-o", "sum"], "'sum' is a reduce op: give it with -r (nccl-tests' -o)"),
                       (["-r", "0"], "nccl-tests' -r is the root")):
        done = subprocess.run([ranks, "bench", "--sim", "-n", "2", "--", *args, "-e", "8"],
                              capture_output=True, text=True)
        assert done.returncode != 0 and said in done.stdout + done.stderr, (args, done)
    # A size below one element per rank gets a line that says so, not silence.
    done = subprocess.run([ranks, "bench", "--sim", "-n", "4", "--", "-o", "all_gather", "-b", "8",
                           "-e", "32", "-n", "1", "-w", "0"], capture_output=True, text=True)
    assert done.returncode == 0, done
    assert "# 8 bytes: less than one float32 per rank on 4 ranks; no row" in done.stdout, done.stdout
    assert any(l.split() and l.split()[0] == "16" for l in done.stdout.splitlines()), done.stdout
    print("check_bench_cli: ok")


if __name__ == "__main__":
    main(*sys.argv[1:])
