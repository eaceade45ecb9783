"""Stops a `ranks sim` run of spinning_rank.py from outside, as a terminal (SIGINT), a CI
system's time limit (SIGTERM), a closed session (SIGHUP) or a kill -9 of the command (SIGKILL)
would, once rank 1 has said it is computing, and checks what is left: the report of where each
rank stood, the signal named, nothing left running.

usage: interrupt_sim.py RANKS_CLI SIGNAL threads|fibers
"""

import json
import os
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "spinning_rank.py")


def line_of(marker):
    with open(SCRIPT) as source:
        for number, text in enumerate(source, 1):
            if marker in text:
                return number
    raise AssertionError(marker)


def main():
    cli, signal_name, mode = sys.argv[1:]
    sig = getattr(signal, "SIG" + signal_name)
    report_path = os.path.join(tempfile.mkdtemp(), "report.json")
    env = dict(os.environ, RANKS_SIM_RANK_THREADS="1" if mode == "threads" else "0")
    run = subprocess.Popen(
        [cli, "sim", "-n", "3", "--backend", "gloo", "--report", report_path, "--",
         sys.executable, SCRIPT],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    seen = []
    for line in run.stdout:
        seen.append(line)
        if "rank 1 is computing" in line:
            break
    else:
        sys.exit("the run ended before rank 1 started computing:\n" + "".join(seen))
    run.send_signal(sig)
    # The program holds the same pipe: its end is the end of the output.
    rest = run.stdout.read()
    status = run.wait(timeout=60)
    output = "".join(seen) + rest
    print(output)
    told = signal.SIGTERM if sig == signal.SIGKILL else sig
    expected_status = -signal.SIGKILL if sig == signal.SIGKILL else 128 + sig
    assert status == expected_status, f"status {status}, expected {expected_status}"
    spin_at = f"spinning_rank.py:{line_of('the line rank 1 is at')}"
    wait_at = f"spinning_rank.py:{line_of('where the others wait')}"
    first_at = f"spinning_rank.py:{line_of('dist.all_reduce(values)')}"
    headline = (f"the run was interrupted by signal {int(told)} ({told.name}) while rank 1 was "
                f"running, after entering its op 1 (all_reduce on group 'world' seq 0 at "
                f"{first_at})")
    if mode == "threads":
        headline += f", now at {spin_at}"
    assert "ranks sim: outcome error (3 ranks, gloo rules" in output, output
    assert headline in output, headline
    for rank in (0, 2):
        assert f"  rank {rank}       blocked in all_reduce on group 'world' seq 1 at {wait_at}" \
            in output
    assert "  rank 1       failed (the message above)" in output
    if sig != signal.SIGKILL:  # a killed command leaves the program no report path to write
        check_report(report_path, headline, told, wait_at)
    print(f"interrupt_sim: {signal_name} ({mode}) reported as expected")


def check_report(report_path, headline, told, wait_at):
    with open(report_path) as f:
        report = json.load(f)
    assert report["outcome"] == "error"
    assert report["message"].startswith(headline)
    rows = {row["rank"]: row for row in report["ranks"]}
    assert rows[1]["state"] == "failed"
    assert rows[1]["error"].startswith(f"interrupted by {told.name} while running")
    for rank in (0, 2):
        assert (rows[rank]["state"], rows[rank]["op"], rows[rank]["where"]) == (
            "blocked", "all_reduce", wait_at)


if __name__ == "__main__":
    main()
