"""nccl from Python as a real rank (started by ranks run or torchrun, one rank per GPU): an
all_reduce of a cpu tensor (staged through the GPU, the result back on the cpu), and where torch
has CUDA, of a cuda tensor in place and an object collective. Prints 'ok <rank>/<world> nccl'.
On a machine without a GPU init_dist fails with the reason (check_real.py --no-gpu-says)."""

import torch

import ranks.dist as dist

dist.init_dist(dist.infer_launcher(), backend="nccl")
rank, world = dist.get_dist_info()
expected = [world * (world + 1) / 2] * 4
on_cpu = torch.full((4,), float(rank + 1))
dist.all_reduce(on_cpu)
assert on_cpu.device.type == "cpu" and on_cpu.tolist() == expected, on_cpu
if torch.cuda.is_available():
    device = dist.get_comm_device()
    assert device.type == "cuda", device
    on_gpu = torch.full((4,), float(rank + 1), device=device)
    dist.all_reduce(on_gpu)
    assert on_gpu.device == device and on_gpu.tolist() == expected, on_gpu
    gathered = dist.all_gather(on_gpu)
    assert [piece.tolist() for piece in gathered] == [expected] * world, gathered
    assert dist.all_gather_object({"rank": rank}) == [{"rank": r} for r in range(world)]
dist.barrier()
print(f"ok {rank}/{world} nccl", flush=True)
