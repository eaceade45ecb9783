#!/usr/bin/env python3
"""Runs a real multi-process command and checks that it exited 0 and that every rank printed
'ok <rank>/<world> <backend>' (run_real.py's last line), or, with --printed, that stdout has
that text (a scenario's summary line).

    check_real.py --ranks 3 --backend gloo -- ranks run -n 3 -- python3 run_real.py @tmpdir
    check_real.py --printed "train_step.py: 3 ranks" -- ranks run -n 3 -- python3 train_step.py
    check_real.py --ranks 1 --backend nccl --no-gpu-says "no CUDA device" -- ranks run ...

With --no-gpu-says, on a machine without a GPU (no /dev/nvidia<N>) the command must fail and
say that text instead.

@tmpdir in the command (an argument, or part of one) stands for a fresh directory every rank
can reach (collect_results', a file store's file).
"""

import argparse
import glob
import re
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int)
    parser.add_argument("--backend")
    parser.add_argument("--printed")
    parser.add_argument("--no-gpu-says")
    parser.add_argument("--says-once", help="text the run's output must hold exactly once")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    with tempfile.TemporaryDirectory() as scratch:
        command = [part.replace("@tmpdir", scratch) for part in command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=110)
    output = done.stdout + done.stderr
    if args.no_gpu_says is not None and not glob.glob("/dev/nvidia[0-9]*"):
        if done.returncode == 0 or args.no_gpu_says not in output:
            print(output)
            sys.exit(f"check_real: without a GPU, exit status {done.returncode}; output "
                     f"{'has' if args.no_gpu_says in output else 'lacks'} {args.no_gpu_says!r}")
        print(f"no GPU: failed saying {args.no_gpu_says!r}")
        return
    if args.printed is not None:
        if done.returncode != 0 or args.printed not in done.stdout:
            print(output)
            sys.exit(f"check_real: exit status {done.returncode}; stdout "
                     f"{'has' if args.printed in done.stdout else 'lacks'} {args.printed!r}")
        print(f"printed {args.printed!r}")
        return
    # Ranks write concurrently to one pipe: lines may run together ("ok 0/2 gloook 1/2 gloo").
    seen = set(re.findall(rf"ok (\d+)/{args.ranks} {args.backend}", done.stdout))
    want = {str(rank) for rank in range(args.ranks)}
    if done.returncode != 0 or seen != want:
        print(output)
        sys.exit(f"check_real: exit status {done.returncode}; ranks that printed ok: "
                 f"{sorted(seen)}, expected {sorted(want)}")
    if args.says_once is not None and output.count(args.says_once) != 1:
        print(output)
        sys.exit(f"check_real: the output holds {args.says_once!r} "
                 f"{output.count(args.says_once)} times, expected once")
    print(f"{args.ranks} {args.backend} ranks ok")


if __name__ == "__main__":
    main()
