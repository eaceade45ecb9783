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
    print("check_report: ok")


if __name__ == "__main__":
    main(*sys.argv[1:])
