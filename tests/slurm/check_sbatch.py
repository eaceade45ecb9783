#!/usr/bin/env python3
"""A batch job: the scenarios under srun and under mpirun inside the allocation.

  check_sbatch.py DIR TRAIN_STEP EVAL_GATHER PIPELINE

Writes DIR/job.sh (`#SBATCH -n 3`: srun train_step on every task, srun -n 2 eval_gather,
mpirun pipeline over the mpi backend), runs `sbatch --wait`, and checks that the job exited 0
and that its output file has each scenario's summary line.
"""
import pathlib
import subprocess
import sys

WANT = ("train_step: 3 ranks", "eval_gather: 2 ranks", "pipeline: 3 stages")


def main():
    work = pathlib.Path(sys.argv[1])
    train_step, eval_gather, pipeline = sys.argv[2:5]
    work.mkdir(parents=True, exist_ok=True)
    script, output = work / "job.sh", work / "job.out"
    output.unlink(missing_ok=True)
    script.write_text(f"""#!/bin/bash
#SBATCH -n 3
#SBATCH --time=2
set -e
srun {train_step}
srun -n 2 {eval_gather}
mpirun --allow-run-as-root -x RANKS_BACKEND=mpi {pipeline}
""")
    done = subprocess.run(["sbatch", "--wait", "-o", str(output), str(script)],
                          capture_output=True, text=True, timeout=100)
    text = output.read_text() if output.exists() else ""
    missing = [line for line in WANT if line not in text]
    if done.returncode != 0 or missing:
        print(done.stdout + done.stderr + text)
        sys.exit(f"check_sbatch: sbatch exited {done.returncode}; missing {missing}")
    print("the batch job ran every scenario under srun and mpirun")


if __name__ == "__main__":
    main()
