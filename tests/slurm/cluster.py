#!/usr/bin/env python3
"""A one-host SLURM cluster for the tests: Debian's slurmctld and slurmd, authenticated by a
munged of its own, started and stopped by ctest fixtures.

    cluster.py start DIR    writes DIR/slurm.conf for this host, starts munged, slurmctld and
                            slurmd on free ports, and returns once the node takes jobs
    cluster.py stop DIR     stops them (and any job step still running)

Clients find the cluster through SLURM_CONF=DIR/slurm.conf. The node is this host under its
own name (which must resolve: ranks take MASTER_ADDR from SLURM's node list), with every CPU;
the node claims at least 8 CPUs; the plugins need no cgroups (proctrack/linuxproc, task/none), and every daemon runs as root, as
the tests do. Everything the cluster writes stays in DIR.
"""
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

START_DEADLINE_S = 60
DAEMONS = ("slurmd", "slurmctld", "munged")  # stop order


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(state):
    host = socket.gethostname().split(".")[0]
    # The tests run up to 4 ranks on a host of 2 CPUs: the node claims 8, which slurmd accepts
    # with config_overrides (the ranks then share the real CPUs, as oversubscribed mpirun does).
    cpus = max(8, os.cpu_count())
    ctld, slurmd = free_port(), free_port()
    conf = f"""\
ClusterName=ranks
SlurmctldHost={host}
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={state}/munge.sock
CredType=cred/munge
StateSaveLocation={state}/ctld
SlurmdSpoolDir={state}/spool
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd.pid
SlurmctldLogFile={state}/slurmctld.log
SlurmdLogFile={state}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=10
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=ranks Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""
    (state / "slurm.conf").write_text(conf)
    return host


def start(state):
    stop(state, quiet=True)  # daemons left by a run that never reached its cleanup
    state.mkdir(parents=True, exist_ok=True)
    for sub in ("ctld", "spool"):
        (state / sub).mkdir(exist_ok=True)
    host = write_config(state)
    env = dict(os.environ, SLURM_CONF=str(state / "slurm.conf"))
    subprocess.run(["munged", "--force", f"--socket={state}/munge.sock",
                    "--key-file=/etc/munge/munge.key", f"--pid-file={state}/munged.pid",
                    f"--log-file={state}/munged.log", f"--seed-file={state}/munge.seed"],
                   check=True)
    subprocess.run(["slurmctld", "-c", "-i"], env=env, check=True)
    subprocess.run(["slurmd", "-c"], env=env, check=True)
    deadline = time.monotonic() + START_DEADLINE_S
    state_seen = ""
    while time.monotonic() < deadline:
        done = subprocess.run(["sinfo", "-h", "-n", host, "-o", "%t"], env=env,
                              capture_output=True, text=True)
        state_seen = done.stdout.strip()
        if done.returncode == 0 and state_seen in ("idle", "mix", "alloc"):
            print(f"slurm cluster up: node {host}, SLURM_CONF={state}/slurm.conf")
            return
        time.sleep(0.2)  # polling the daemons' readiness, bounded by the deadline
    for log in ("slurmctld.log", "slurmd.log", "munged.log"):
        path = state / log
        if path.exists():
            print(f"--- {log}\n" + path.read_text()[-3000:])
    stop(state)
    sys.exit(f"cluster.py: node {host} not ready within {START_DEADLINE_S} s "
             f"(sinfo says {state_seen!r})")


def stop(state, quiet=False):
    env = dict(os.environ, SLURM_CONF=str(state / "slurm.conf"))
    if (state / "slurm.conf").exists():
        subprocess.run(["scancel", "--quiet", "--full", "--user=root"], env=env,
                       capture_output=True, timeout=30)
    for daemon in DAEMONS:
        pid_file = state / f"{daemon}.pid"
        try:
            pid = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
    if not quiet:
        print("slurm cluster stopped")


def main():
    action, state = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
    {"start": start, "stop": stop}[action](state)


if __name__ == "__main__":
    main()
