"""DDP over gloo on CPU, ranks started with torch.multiprocessing.spawn as the DDP tutorial does. argv: port batch
d0 d1 d2 steps."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


def run(rank, world, port, batch, d0, d1, d2, steps):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(d0, d1), torch.nn.ReLU(), torch.nn.Linear(d1, d2))
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(ddp.parameters())
    for step in range(steps):
        x = torch.randn(batch, d0)
        y = torch.randn(batch, d2)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    port, batch, d0, d1, d2, steps = (int(a) for a in sys.argv[1:7])
    mp.spawn(run, args=(2, port, batch, d0, d1, d2, steps), nprocs=2)
