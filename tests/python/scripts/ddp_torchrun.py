"""The DDP script as torchrun runs it: rank and world from the environment (RANK, WORLD_SIZE, MASTER_ADDR/PORT).
argv: batch d0 d1 d2 steps."""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

batch, d0, d1, d2, steps = (int(a) for a in sys.argv[1:6])
dist.init_process_group("gloo")
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
