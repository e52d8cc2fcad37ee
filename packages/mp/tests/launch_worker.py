"""A worker for tests/test_launcher.py: joins the group with env://, checks its environment and
an all_reduce against the value every rank can compute, prints one line."""

import os
import sys

import ember
import ember.distributed as dist

backend = sys.argv[1]
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
assert rank == int(os.environ["GROUP_RANK"]) * local_world + local
dist.init_process_group(backend)
assert (dist.get_rank(), dist.get_world_size()) == (rank, world)
t = ember.full((3,), float(rank + 1))
dist.all_reduce(t)
assert t.tolist() == [world * (world + 1) / 2] * 3, t
if len(sys.argv) > 2 and sys.argv[2] == "fail" and rank == world - 1:
    sys.exit(7)
dist.barrier()
print(f"worker {rank}/{world} local {local} backend {dist.get_backend()} ok", flush=True)
dist.destroy_process_group()
