"""Kills `ranks run` outright (SIGKILL: nothing of it can react) once each of its ranks has
started a process of its own, and checks that those processes end too, within a bound.

usage: kill_launcher.py RANKS_CLI
"""

import os
import select
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = 2
BOUND_SECONDS = 30


def ends_within(pid, seconds):
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True  # already gone
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(seconds * 1000))  # readable once the process has ended
    finally:
        os.close(pidfd)


def main():
    cli = sys.argv[1]
    launcher = subprocess.Popen(
        [cli, "run", "-n", str(RANKS), "--", sys.executable,
         os.path.join(HERE, "rank_with_child.py")],
        stdout=subprocess.PIPE, text=True)
    started = []
    for line in launcher.stdout:
        if "started " in line:
            started.append(int(line.split("started ")[1]))
            if len(started) == RANKS:
                break
    if len(started) != RANKS:
        sys.exit(f"the ranks did not all start their processes: {started}")
    launcher.send_signal(signal.SIGKILL)
    launcher.wait(timeout=BOUND_SECONDS)
    left = [pid for pid in started if not ends_within(pid, BOUND_SECONDS)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)  # leave nothing behind, whatever the outcome
    assert not left, f"processes started by the ranks outlived the killed launcher: {left}"
    print(f"kill_launcher: what the {RANKS} ranks started ended with the launcher")


if __name__ == "__main__":
    main()
