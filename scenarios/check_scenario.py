#!/usr/bin/env python3
"""Runs a scenario under `ranks sim` twice and checks what the report says.

  check_scenario.py --ranks build/tools/ranks --program build/scenarios/bug_recv_cycle \
      --source scenarios/bugs/recv_cycle.cpp --outcome deadlock \
      --expect ranks.0.op=recv --expect ranks.0.where=@where:recv --cycle 0,1,2,3 \
      -- -n 4 --backend gloo

Checks: the outcome; the exit status (0 exactly when the outcome is ok); each --expect
(a dotted path into the JSON report = a value; "@where:TAG" stands for the file:line of the
source line marked "// @where:TAG", or "# @where:TAG" in a Python script); --contains (a substring of the message); --printed (a
substring of what the program wrote to stdout, report aside); --cycle; and that
two runs write byte-identical reports and traces (the simulator is deterministic).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def where(source, tag):
    with open(source) as f:
        for number, line in enumerate(f, 1):
            if f"// @where:{tag}" in line or f"# @where:{tag}" in line:
                return f"{os.path.basename(source)}:{number}"
    sys.exit(f"check_scenario: no '// @where:{tag}' in {source}")


def lookup(report, path):
    value = report
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--interpreter", help="run the program with it (python3 for scripts)")
    parser.add_argument("--source")
    parser.add_argument("--outcome", required=True)
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("--contains", action="append", default=[])
    parser.add_argument("--printed", action="append", default=[])
    parser.add_argument("--cycle")
    parser.add_argument("sim_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    sim_args = [a for a in args.sim_args if a != "--"]

    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        runs = []
        for run in ("a", "b"):
            report, trace = f"{scratch}/report.{run}.json", f"{scratch}/trace.{run}.json"
            done = subprocess.run(
                [args.ranks, "sim", *sim_args, "--report", report, "--trace", trace, "--",
                 *([args.interpreter] if args.interpreter else []), args.program],
                capture_output=True, text=True, timeout=120)
            runs.append((done, report, trace))
        done, report_path, _ = runs[0]
        output = done.stdout + done.stderr
        with open(report_path) as f:
            report = json.load(f)
        if report["outcome"] != args.outcome:
            failures.append(f"outcome is {report['outcome']}, expected {args.outcome}")
        if (done.returncode == 0) != (args.outcome == "ok"):
            failures.append(f"exit status {done.returncode} for outcome {report['outcome']}")
        for item in args.expect:
            path, _, want = item.partition("=")
            if want.startswith("@where:"):
                want = where(args.source, want[len("@where:"):])
            try:
                got = lookup(report, path)
            except (KeyError, IndexError, ValueError):
                failures.append(f"{path} is missing")
                continue
            if str(got) != want:
                failures.append(f"{path} is {got!r}, expected {want!r}")
        states = {"finished", "blocked", "failed", "crashed"}  # shared/API.md's vocabulary
        odd = [row["rank"] for row in report["ranks"] if row["state"] not in states]
        if odd:
            failures.append(f"ranks {odd[:8]} have states outside {sorted(states)}")
        for part in args.contains:
            if part not in report["message"]:
                failures.append(f"the message lacks {part!r}")
        for part in args.printed:
            if part not in done.stdout:
                failures.append(f"stdout lacks {part!r}")
        if args.cycle is not None:
            want = [int(r) for r in args.cycle.split(",")] if args.cycle else []
            if report["cycle"] != want:
                failures.append(f"cycle is {report['cycle']}, expected {want}")
        for index in (1, 2):
            a, b = runs[0][index], runs[1][index]
            if not os.path.exists(a) and not os.path.exists(b):
                continue  # a run the simulator refused to start has no trace
            if not os.path.exists(a) or not os.path.exists(b) or \
                    open(a, "rb").read() != open(b, "rb").read():
                failures.append(f"two runs wrote different {os.path.basename(a)} files")
    if failures:
        print(output)
        print(json.dumps(report, indent=2)[:4000])
        sys.exit("check_scenario: " + "; ".join(failures))
    print(f"{os.path.basename(args.program)}: {report['outcome']} as expected; "
          f"{len(args.expect)} facts checked; two runs identical")


if __name__ == "__main__":
    main()
