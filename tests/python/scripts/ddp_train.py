"""DDP over gloo, ranks started with torch.multiprocessing.spawn as the DDP tutorial does. argv: port batch d0 d1 d2
steps. The device is $TRAIN_DEVICE (default cpu). On cuda rank r uses GPU r mod the GPU count, so on one GPU both
ranks share it: gloo allows that (NCCL refuses two ranks on one GPU), and it is what ShardScope's `--process-group
gloo` models; the model is moved there and wrapped with device_ids=[that GPU], as tests/gpu/pytorch_reference.py
(the PyTorch side of the H200 sweep) does."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


def run(rank, world, port, batch, d0, d1, d2, steps):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    device = torch.device(os.environ.get("TRAIN_DEVICE", "cpu"))
    if device.type == "cuda":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(d0, d1), torch.nn.ReLU(), torch.nn.Linear(d1, d2))
    if device.type == "cuda":
        ddp = DistributedDataParallel(model.to(device), device_ids=[device.index])
    else:
        ddp = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(ddp.parameters())
    for step in range(steps):
        x = torch.randn(batch, d0, device=device)
        y = torch.randn(batch, d2, device=device)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    port, batch, d0, d1, d2, steps = (int(a) for a in sys.argv[1:7])
    mp.spawn(run, args=(2, port, batch, d0, d1, d2, steps), nprocs=2)
