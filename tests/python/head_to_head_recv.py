"""Two ranks that each receive from the other first: a real run can never finish. Under
`RANKS_TIMEOUT=3 ranks run -n 2` each rank must fail with ranks' Timeout after 3 s, not the
30-minute default, with nothing in the script asking for it (one job script serves `ranks sim`
and real runs)."""

import numpy

import ranks.dist as dist

dist.init_dist("pytorch", backend="gloo")
peer = 1 - dist.get_rank()
dist.recv(numpy.zeros(4), src=peer)  # line 12
dist.send(numpy.ones(4), dst=peer)
