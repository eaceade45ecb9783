#!/usr/bin/env python3
"""A real rank that dies must not leave the others hanging.

  check_run_failure.py RANKS_CLI PROGRAM [BACKEND]

Runs `ranks run -n 3 --backend BACKEND -- PROGRAM` (gloo by default) with CRASH_RANK=1 (the
program aborts on that rank mid-job) and checks that ranks run returns non-zero and says that
rank 1 died on SIGABRT, and that the other ranks were stopped or failed on their own (the command
returned: ctest's timeout catches a hang). With gloo, `ranks run` itself names the first failure
and the survivors name rank 1's error as its cause; with mpi, mpirun starts the ranks and stops
the job, and ranks run relays its tagged lines with the same "[rank k] " prefixes, names the rank
mpirun says failed first, and exits with mpirun's status (a rank's exit(3) is the job's).
"""
import os
import signal
import subprocess
import sys
import time


def main():
    ranks_cli, program = sys.argv[1], sys.argv[2]
    backend = sys.argv[3] if len(sys.argv) > 3 else "gloo"
    command = [ranks_cli, "run", "-n", "3", "--backend", backend, "--grace", "20", "--", program]
    env = dict(os.environ, CRASH_RANK="1", RANKS_TIMEOUT="60")
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=100)
    output = done.stdout + done.stderr
    failures = []
    if done.returncode == 0:
        failures.append("ranks run exited 0")
    if backend == "mpi":
        if "process rank 1 with PID" not in output or "exited on signal 6" not in output:
            failures.append("mpirun's report does not say rank 1 died on SIGABRT")
        if "ranks run: rank 1 was killed by signal 6 (Aborted) first" not in done.stderr:
            failures.append("ranks run does not name rank 1's SIGABRT as the first failure")
        # Rank 1's backtrace, written in pieces, reaches mpirun with a tag on every piece.
        if "]<stderr>:" in output or "]<stdout>:" in output:
            failures.append("mpirun's tags are left in the relayed lines")
        if not any(line.startswith("[rank 1] ") and "Process received signal" in line
                   for line in done.stderr.splitlines()):
            failures.append("rank 1's backtrace is not relayed with its rank in front")
        finish(failures, output, check_mpi_error(command, env) + check_mpi_exit(command))
        return
    if "ranks run: rank 1 (pid" not in done.stderr:
        failures.append("the report does not name rank 1 as the first failure")
    if "killed by signal 6" not in done.stderr:
        failures.append("the report does not say rank 1 died on SIGABRT")
    # A rank that fails with an error of its own publishes it; the others name it as the cause.
    env = dict(os.environ, FAIL_RANK="1", RANKS_TIMEOUT="60")
    thrown = subprocess.run(command, capture_output=True, text=True, env=env, timeout=100)
    cause = "the first failure was rank 1: the data loader ran out of batches"
    survivors = [line for line in thrown.stdout.splitlines() + thrown.stderr.splitlines()
                 if cause in line]
    if thrown.returncode == 0:
        failures.append("ranks run exited 0 when rank 1 threw")
    if not any(line.startswith("[rank 0]") for line in survivors) and \
            not any(line.startswith("[rank 2]") for line in survivors):
        failures.append("no survivor names rank 1's error as the first failure")
        output += thrown.stdout + thrown.stderr
    failures += check_exit(command)
    failures += check_return(command)
    failures += check_launcher_signal(command)
    finish(failures, output, [])


def check_exit(command):
    """Rank 1 calls exit(3): it, not a survivor that stopped because of it, is named, and ranks
    run exits with its status."""
    env = dict(os.environ, EXIT_RANK="1", RANKS_TIMEOUT="60")
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=100)
    if done.returncode != 3 or "ranks run: rank 1 (pid" not in done.stderr or \
            "exited with status 3" not in done.stderr:
        print(done.stdout + done.stderr)
        return [f"rank 1's exit(3) is not what ranks run names (exit {done.returncode})"]
    return []


def check_return(command):
    """Rank 1 returns from its body early: the others fail for its sake (exit 75), and ranks run
    says no rank failed on its own and names rank 1 as having exited 0 meanwhile."""
    env = dict(os.environ, RETURN_RANK="1", RANKS_TIMEOUT="60")
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=100)
    expected = ["ranks run: no rank failed for a reason of its own: ranks 0, 2 stopped",
                "ranks run: rank 1 exited with status 0 meanwhile"]
    missing = [text for text in expected if text not in done.stderr]
    if done.returncode != 75 or missing:
        print(done.stdout + done.stderr)
        return [f"rank 1's early return is not what ranks run names (exit {done.returncode})"]
    return []


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def check_launcher_signal(command):
    """SIGTERM to ranks run (a scheduler, `timeout`) reaches every rank: none is left running."""
    env = dict(os.environ, STALL_RANK="1", RANKS_TIMEOUT="60")
    launcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
    deadline = time.monotonic() + 30
    ranks = children_of(launcher.pid)
    while len(ranks) < 3 and time.monotonic() < deadline:
        ranks = children_of(launcher.pid)
    if len(ranks) < 3:
        launcher.kill()
        return ["ranks run did not start 3 ranks within 30 s"]
    launcher.send_signal(signal.SIGTERM)
    out, err = launcher.communicate(timeout=60)
    alive = [pid for pid in ranks if os.path.exists(f"/proc/{pid}")]
    failures = []
    if alive:
        for pid in alive:
            os.kill(pid, signal.SIGKILL)
        failures.append(f"ranks {alive} outlived a SIGTERM to ranks run")
    if launcher.returncode != 128 + signal.SIGTERM or "stopped by signal 15" not in err:
        print(out + err)
        failures.append(f"ranks run exited {launcher.returncode} on SIGTERM")
    return failures


def check_mpi_error(command, env):
    """Rank 1 throws: its error is printed, and mpirun stops the job naming rank 1."""
    env = dict(env, FAIL_RANK="1")
    env.pop("CRASH_RANK", None)
    thrown = subprocess.run(command, capture_output=True, text=True, env=env, timeout=100)
    output = thrown.stdout + thrown.stderr
    failures = []
    if thrown.returncode == 0:
        failures.append("ranks run exited 0 when rank 1 threw")
    if "[rank 1] ranks: error: the data loader ran out of batches" not in thrown.stderr:
        failures.append("rank 1's error is not on stderr with its rank in front")
    if "ranks run: rank 1 exited with status 1 first" not in thrown.stderr:
        failures.append("ranks run does not name rank 1 as the first failure")
    if "Process name: [[" not in output or "],1]" not in output:
        failures.append("mpirun does not name rank 1 as the first to exit non-zero")
    if failures:
        print(output)
    return failures


def check_mpi_exit(command):
    """Rank 1 calls exit(3): it leaves without MPI_Finalize (which would wait for the others,
    who wait for it), so mpirun stops the job with rank 1's status instead of every rank
    waiting out RANKS_TIMEOUT and exiting 75."""
    env = dict(os.environ, EXIT_RANK="1", RANKS_TIMEOUT="60")
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=100)
    output = done.stdout + done.stderr
    if done.returncode != 3 or "exiting without MPI_Finalize" not in output or \
            "ranks run: rank 1 exited with status 3 first" not in done.stderr:
        print(output)
        return [f"rank 1's exit(3) under mpi ended the job with status {done.returncode}"]
    return []


def finish(failures, output, more):
    failures = failures + more
    if failures:
        print(output)
        sys.exit("check_run_failure: " + "; ".join(failures))
    print("ranks run stopped the job and named the rank that failed first")


if __name__ == "__main__":
    main()
