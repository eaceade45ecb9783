"""Runs bodies.run_all as one real rank: started by `ranks run`, mpirun or torchrun, backend from
RANKS_BACKEND (default gloo). Prints 'ok <rank>/<world>' when every body passed."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bodies  # noqa: E402
import ranks.dist as dist  # noqa: E402

dist.init_dist(dist.infer_launcher(), backend=os.environ.get("RANKS_BACKEND", "gloo"))
bodies.run_all(sys.argv[1])
rank, world = dist.get_dist_info()
dist.barrier()
print(f"ok {rank}/{world} {dist.get_backend()}", flush=True)
