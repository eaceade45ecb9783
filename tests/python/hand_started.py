"""The ranks of a real Python job started by hand, with torchrun's variables and no launcher in
between, so that a test sees each rank's own exit status and output."""

import os
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ranks(argv, world_size, **env):
    """One process per rank running `python argv...`, its stdout and stderr piped; env is added
    to every rank's environment."""
    port = free_port()
    ranks = []
    for rank in range(world_size):
        rank_env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world_size),
                        LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world_size),
                        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **env)
        ranks.append(subprocess.Popen([sys.executable, *argv], env=rank_env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return ranks
