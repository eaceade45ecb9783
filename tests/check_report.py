#!/usr/bin/env python3
"""ctest: `ranks calibrate` and `ranks report` on a small fixture produce the expected files.

usage: check_report.py RANKS FIXTURE.jsonl WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys


def main(ranks, fixture, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = os.path.join(work, "model.json")
    subprocess.run([ranks, "calibrate", fixture, "-o", model], check=True)
    fitted = json.load(open(model, encoding="utf-8"))
    assert fitted["backend"] == "gloo", fitted
    assert set(fitted["ops"]) == {"all_reduce", "sendrecv"}, fitted["ops"].keys()
    # --check judges the fitted model on other measurements: the same points measured twice as
    # slow are at least 35 % off wherever the fit is within 30 % of the fixture.
    slower = os.path.join(work, "slower.jsonl")
    with open(fixture, encoding="utf-8") as src, open(slower, "w", encoding="utf-8") as dst:
        for line in src:
            row = json.loads(line)
            row["time_us"] *= 2
            dst.write(json.dumps(row) + "\n")
    done = subprocess.run([ranks, "calibrate", fixture, "-o", model, "--check", slower],
                          check=True, capture_output=True, text=True)
    tables = done.stderr.split("it was not fitted to")
    assert len(tables) == 2, done.stderr
    fitted_worst = [float(l.split()[2].rstrip("%")) for l in tables[0].splitlines()
                    if l.startswith("  ") and l.split()[0] != "op"]
    held_worst = [float(l.split()[2].rstrip("%")) for l in tables[1].splitlines()
                  if l.startswith("  ") and l.split()[0] != "op"]
    assert fitted_worst and len(held_worst) == len(fitted_worst), done.stderr
    assert max(fitted_worst) < 30 and min(held_worst) >= 35, done.stderr
    out = os.path.join(work, "report")
    subprocess.run([ranks, "report", fixture, "--model", f"gloo={model}", "-o", out,
                    "--title", "fixture report"], check=True)
    expected = {"summary.md", "results.jsonl", "all_reduce.png", "sendrecv.png"}
    present = set(os.listdir(out))
    assert expected <= present, f"missing {expected - present}"
    for picture in ("all_reduce.png", "sendrecv.png"):
        with open(os.path.join(out, picture), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", picture
    summary = open(os.path.join(out, "summary.md"), encoding="utf-8").read()
    for part in ("# fixture report", "## Model error (sizes ≥ 4 KiB)", "## all_reduce",
                 "![all_reduce](all_reduce.png)", "| all_reduce | gloo n=2 |",
                 "every checked row had #wrong = 0"):
        assert part in summary, f"summary.md lacks {part!r}"
    rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl"), encoding="utf-8")]
    assert all("predicted_us" in r for r in rows), "every gloo row gets a prediction"
    # One world size on one node and on four are two series, not one with rows overwritten.
    nodes = os.path.join(work, "nodes.jsonl")
    with open(nodes, "w", encoding="utf-8") as f:
        for per_node, us in ((16, 23.0), (4, 59.0)):
            for size in (4096, 1 << 20):
                f.write(json.dumps({"backend": "gloo", "world_size": 16, "ranks_per_node": per_node,
                                    "op": "all_reduce", "bytes": size, "time_us": us}) + "\n")
    out = os.path.join(work, "nodes")
    subprocess.run([ranks, "report", nodes, "-o", out], check=True, capture_output=True)
    summary = open(os.path.join(out, "summary.md"), encoding="utf-8").read()
    for label in ("gloo n=16 (16/node)", "gloo n=16 (4/node)"):
        assert f"| all_reduce | {label} |" in summary or f" {label} µs |" in summary, \
            f"summary.md lacks the series {label!r}:\n{summary}"
    print("check_report: ok")


if __name__ == "__main__":
    main(*sys.argv[1:])
