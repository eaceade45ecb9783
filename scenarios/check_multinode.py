#!/usr/bin/env python3
"""Several nodes on one host: a `ranks run --nnodes K --node-rank I` launcher per node, over
loopback, gloo.

  check_multinode.py RANKS_CLI ok NODES NPROC PROGRAM PRINTED
      every launcher exits 0 and node 0's output has PRINTED (the scenario's summary line)
  check_multinode.py RANKS_CLI killed STALLING_PROGRAM
      2 nodes x 2 ranks; once the launchers are in touch, node 1's launcher is killed (SIGKILL):
      node 0's launcher exits 75 saying that node 1 (ranks 2-3) vanished, while the job's
      timeout (RANKS_TIMEOUT=300, past ctest's limit) is far away
  check_multinode.py RANKS_CLI frozen STALLING_PROGRAM
      the same, but node 1 (launcher and ranks) is frozen with SIGSTOP: node 0's ranks time out
      (RANKS_TIMEOUT=5) and its launcher names node 1 as frozen; once resumed (SIGCONT), node 1's
      launcher exits too

STALLING_PROGRAM is scenarios/bugs/crashed_rank.cpp run with STALL_RANK=2: rank 2 (on node 1)
sleeps before its third all_reduce, so that the job is still running when node 1 is stopped.
"""
import os
import signal
import socket
import subprocess
import sys
import threading

IN_TOUCH = "is in touch with the launchers of the other"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Launcher:
    """One node's `ranks run`, its stderr read by a thread (so no pipe fills up)."""

    def __init__(self, cli, nodes, node, nproc, port, program, env):
        command = [cli, "run", "-n", str(nproc), "--nnodes", str(nodes), "--node-rank",
                   str(node), "--master-addr", "127.0.0.1", "--master-port", str(port),
                   "--backend", "gloo", "--", program]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env, start_new_session=True)
        self.out, self.err = [], []
        self.changed = threading.Condition()
        self.readers = [threading.Thread(target=self.read, args=(self.process.stdout, self.out)),
                        threading.Thread(target=self.read, args=(self.process.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    def read(self, stream, lines):
        for line in stream:
            with self.changed:
                lines.append(line)
                self.changed.notify_all()

    def wait_for(self, text, timeout=60):
        """Whether a line with text was written within timeout seconds."""
        with self.changed:
            return self.changed.wait_for(lambda: text in self.text(), timeout)

    def finish(self, timeout=100):
        code = self.process.wait(timeout=timeout)
        for reader in self.readers:
            reader.join()
        return code

    def text(self):
        return "".join(self.out + self.err)

    def signal_node(self, sig):
        """The launcher and every rank it started (each in a process group of its own)."""
        ranks = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True,
                               text=True).stdout.split()
        self.process.send_signal(sig)
        for pid in ranks:
            try:
                os.killpg(int(pid), sig)
            except ProcessLookupError:
                pass


def start(cli, nodes, nproc, program, env):
    port = free_port()
    return [Launcher(cli, nodes, node, nproc, port, program, env) for node in range(nodes)]


def check_ok(cli, nodes, nproc, program, printed):
    launchers = start(cli, int(nodes), int(nproc), program, dict(os.environ))
    codes = [launcher.finish() for launcher in launchers]
    if any(codes) or printed not in launchers[0].text():
        for launcher in launchers:
            print(launcher.text())
        sys.exit(f"check_multinode: exit statuses {codes}; node 0 printed {printed!r}: "
                 f"{printed in launchers[0].text()}")
    print(f"{nodes} nodes x {nproc} ranks: every launcher exited 0; {printed!r}")


def check_stopped_node(cli, program, how):
    timeout = "300" if how == "killed" else "5"
    env = dict(os.environ, STALL_RANK="2", RANKS_TIMEOUT=timeout)
    node0, node1 = start(cli, 2, 2, program, env)
    failures = []
    # Stopped only once the launchers are in touch and every rank has done its first step (so
    # the ranks are connected: the job is running, not in its rendezvous).
    for launcher, rank in ((node0, 0), (node0, 1), (node1, 2), (node1, 3)):
        if not launcher.wait_for(IN_TOUCH) or not launcher.wait_for(f"rank {rank}: step 0 done"):
            failures.append(f"rank {rank} never did its first step with the launchers in touch")
            break
    if not failures:
        node1.signal_node(signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        code = node0.finish()
        text = node0.text()
        if how == "killed":
            want = "ranks run: node 1 (ranks 2-3) vanished"
            if code != 75 or want not in text:
                failures.append(f"node 0 exited {code}; says {want!r}: {want in text}")
        else:
            want = "ranks run: node 1 (ranks 2-3) has not answered its launcher's pings"
            if code != 75 or want not in text:
                failures.append(f"node 0 exited {code}; says {want!r}: {want in text}")
            node1.signal_node(signal.SIGCONT)
            frozen_code = node1.finish()
            if frozen_code == 0:
                failures.append("the frozen node's launcher exited 0 once resumed")
    for launcher in (node0, node1):
        if launcher.process.poll() is None:
            launcher.signal_node(signal.SIGKILL)
        launcher.finish()
    if failures:
        print(node0.text() + "\n--- node 1\n" + node1.text())
        sys.exit("check_multinode: " + "; ".join(failures))
    print(f"node 1 {how}: node 0's launcher named it and exited 75")


def main():
    cli, mode = sys.argv[1], sys.argv[2]
    if mode == "ok":
        check_ok(cli, *sys.argv[3:7])
    else:
        check_stopped_node(cli, sys.argv[3], mode)


if __name__ == "__main__":
    main()
