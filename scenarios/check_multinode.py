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

  check_multinode.py RANKS_CLI open_refused PROGRAM
      with neither RANKS_STORE_TOKEN nor RANKS_STORE_TOKEN_FILE, a launcher of a 2-node job
      refuses to start (exit 2) and says how to give the job a secret or --open-store
  check_multinode.py RANKS_CLI strangers HOLDING_PROGRAM
      2 nodes x 1 rank whose secret is as long as the store accepts (4 KiB); once the launchers
      are in touch, strangers connect to node 0's launcher and present themselves as node 1
      (the old plain "hello 1", a forged proof, a line too long, silence): each is turned away,
      and the job goes on to exit 0 with no node said to have vanished

Every job but open_refused's gets its secret from RANKS_STORE_TOKEN_FILE, a path in a fresh
directory that node 0's launcher writes (mode 0600) and node 1's reads.

STALLING_PROGRAM is scenarios/bugs/crashed_rank.cpp run with STALL_RANK=2: rank 2 (on node 1)
sleeps before its third all_reduce, so that the job is still running when node 1 is stopped.
HOLDING_PROGRAM is the same program with HOLD_UNTIL=PATH: rank 0 waits there until PATH exists.
"""
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
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


SECRETS = tempfile.TemporaryDirectory(prefix="ranks-multinode-")
SECRET_FILE = os.path.join(SECRETS.name, "job.token")


def job_env(**extra):
    """The test's environment with the job's secret in SECRET_FILE, which node 0 writes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKS_STORE_TOKEN")}
    return dict(env, RANKS_STORE_TOKEN_FILE=SECRET_FILE, **extra)


def start(cli, nodes, nproc, program, env):
    port = free_port()
    return [Launcher(cli, nodes, node, nproc, port, program, env) for node in range(nodes)]


def secret_file_problem():
    """What is wrong with the secret file node 0's launcher wrote, or None."""
    if not os.path.exists(SECRET_FILE):
        return "node 0's launcher wrote no secret file"
    mode = stat.S_IMODE(os.stat(SECRET_FILE).st_mode)
    with open(SECRET_FILE) as f:
        secret = f.read().strip()
    if mode != 0o600 or len(secret) != 64:
        return f"the secret file has mode {mode:o} and {len(secret)} characters"
    return None


def check_ok(cli, nodes, nproc, program, printed):
    launchers = start(cli, int(nodes), int(nproc), program, job_env())
    codes = [launcher.finish() for launcher in launchers]
    problem = secret_file_problem()
    if any(codes) or printed not in launchers[0].text() or problem:
        for launcher in launchers:
            print(launcher.text())
        sys.exit(f"check_multinode: exit statuses {codes}; node 0 printed {printed!r}: "
                 f"{printed in launchers[0].text()}; {problem}")
    print(f"{nodes} nodes x {nproc} ranks: every launcher exited 0; {printed!r}; the secret "
          f"file node 0 wrote has mode 0600")


def check_open_refused(cli, program):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKS_STORE_TOKEN")}
    launcher = Launcher(cli, 2, 1, 1, free_port(), program, env)
    code = launcher.finish(timeout=30)
    want = ["would start the job's rendezvous store open", "RANKS_STORE_TOKEN_FILE",
            "--open-store"]
    if code != 2 or not all(w in launcher.text() for w in want):
        print(launcher.text())
        sys.exit(f"check_multinode: a launcher without a secret exited {code}")
    print("a 2-node launcher without a secret refused to start, saying how to give one")


def listening_ports(pid):
    """The TCP ports process pid listens on (from /proc: its sockets' inodes, then the tables)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def stranger(port, send, read_first):
    """Connects to port as a stranger: reads the first line when read_first, sends send (None:
    nothing), and returns what it was told before the launcher closed the connection."""
    told = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        try:
            if read_first:
                while not told.endswith(b"\n"):
                    chunk = s.recv(1024)
                    if not chunk:
                        break
                    told += chunk
            if send is not None:
                s.sendall(send)
            while chunk := s.recv(1024):  # until the launcher closes it (or the 30 s timeout)
                told += chunk
        except ConnectionResetError:  # closed with what the stranger sent unread
            pass
    return told.decode(errors="replace")


def check_strangers(cli, program):
    hold = os.path.join(SECRETS.name, "let the job end")
    env = dict(job_env(HOLD_UNTIL=hold, RANKS_TIMEOUT="300"), RANKS_STORE_TOKEN="k" * 4096)
    node0, node1 = start(cli, 2, 1, program, env)
    failures = []
    if not (node0.wait_for(IN_TOUCH) and node1.wait_for(IN_TOUCH)):
        failures.append("the launchers never got in touch (a 4 KiB secret)")
    else:
        ports = listening_ports(node0.process.pid)
        if len(ports) != 1:
            failures.append(f"node 0's launcher listens on {ports}, not one port")
        else:
            forged = "hello 1 " + "0" * 64 + " " + "1" * 64 + "\n"
            attempts = {
                "the plain hello": (b"hello 1 \n", False),
                "a forged proof": (forged.encode(), True),
                "a line too long": (b"x" * 4096, True),
                "silence": (None, True),
            }
            for what, (send, read_first) in attempts.items():
                told = stranger(ports[0], send, read_first)
                if "welcome" in told or not told.startswith("challenge "):
                    failures.append(f"{what}: the launcher said {told!r}")
    with open(hold, "w"):
        pass
    codes = [node0.finish(), node1.finish()]
    if codes != [0, 0] or "vanished" in node0.text():
        failures.append(f"the launchers exited {codes}")
    if failures:
        print(node0.text() + "\n--- node 1\n" + node1.text())
        sys.exit("check_multinode: " + "; ".join(failures))
    print("strangers presenting themselves as node 1 were turned away; the job, with a 4 KiB "
          "secret, exited 0")


def check_stopped_node(cli, program, how):
    timeout = "300" if how == "killed" else "5"
    env = job_env(STALL_RANK="2", RANKS_TIMEOUT=timeout)
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
    elif mode == "open_refused":
        check_open_refused(cli, sys.argv[3])
    elif mode == "strangers":
        check_strangers(cli, sys.argv[3])
    else:
        check_stopped_node(cli, sys.argv[3], mode)


if __name__ == "__main__":
    main()
