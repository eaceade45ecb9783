#!/usr/bin/env python3
"""Runs the same program twice, as real processes and simulated, and checks that both exit 0
and print the same result line (the first line of stdout that starts with --line).

    same_result.py --line "ddp_train:" -- torchrun --nproc_per_node 4 ddp_train.py \
        -- ranks sim -n 4 --backend gloo -- python3 ddp_train.py

The simulated run must also report outcome ok. The real run is the reference: the expected
result is whatever torch's own processes compute.
"""

import argparse
import subprocess
import sys


# torch 2.13's gloo now and then aborts a process at interpreter exit, after the program is done
# ("terminate called without an active exception" from a thread of its own): the reference run
# is tried again then, up to twice, and says so. Any other failure fails at once.
TORCH_EXIT_ABORT = "terminate called without an active exception"


def result_line(command, prefix, tries=1):
    for attempt in range(1, tries + 1):
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=600, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith(prefix)]
        if done.returncode == 0 and lines:
            return lines[0], done.stdout
        if lines and TORCH_EXIT_ABORT in done.stdout and attempt < tries:
            print(f"(the real run's torch aborted at exit after its result; run {attempt + 1})")
            continue
        sys.stdout.write(done.stdout)
        raise SystemExit(f"{' '.join(command)}: exit status {done.returncode}, "
                         f"{'no' if not lines else 'a'} line starting with {prefix!r}")
    raise AssertionError("unreachable")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--line", required=True)
    parser.add_argument("commands", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    words = args.commands[1:] if args.commands[:1] == ["--"] else args.commands
    if "--" not in words:
        raise SystemExit("same_result.py: give two commands separated by --")
    split = words.index("--")
    real, simulated = words[:split], words[split + 1:]
    real_line, _ = result_line(real, args.line, tries=3)
    simulated_line, simulated_output = result_line(simulated, args.line)
    print(f"real:      {real_line}\nsimulated: {simulated_line}")
    if "outcome ok" not in simulated_output:
        sys.stdout.write(simulated_output)
        raise SystemExit("the simulated run did not report outcome ok")
    if real_line != simulated_line:
        raise SystemExit("the simulated run's result differs from the real one's")


if __name__ == "__main__":
    main()
