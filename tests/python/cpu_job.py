"""A CPU job written for gloo but started without saying so: under `ranks sim`'s default nccl
rules its reduce of a cpu tensor is refused, and `ranks sim` says how to emulate a CPU job."""

import torch

import ranks.dist as dist

dist.init_dist("pytorch")
t = torch.ones(4)
dist.reduce(t, dst=0)
