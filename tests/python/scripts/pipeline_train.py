"""A hand-written 2-stage pipeline over gloo (GPipe order: every micro-batch's forward, then the backwards in
reverse), ranks started with torch.multiprocessing.spawn. Stage 0: Linear(d0, d1) + ReLU; stage 1: Linear(d1, d2)
and the MSE loss. SGD with momentum. argv: port batch d0 d1 d2 micro_batches steps."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, port, batch, d0, d1, d2, micro, steps):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    if rank == 0:
        stage = torch.nn.Sequential(torch.nn.Linear(d0, d1), torch.nn.ReLU())
    else:
        stage = torch.nn.Sequential(torch.nn.Linear(d1, d2))
    optimizer = torch.optim.SGD(stage.parameters(), lr=0.01, momentum=0.9)
    rows = batch // micro
    for step in range(steps):
        if rank == 0:
            x = torch.randn(batch, d0)
            outputs = []
            for chunk in x.chunk(micro):
                out = stage(chunk)
                dist.send(out.detach(), 1)
                outputs.append(out)
            for out in reversed(outputs):
                grad = torch.empty(rows, d1)
                dist.recv(grad, 1)
                out.backward(grad)
        else:
            y = torch.randn(batch, d2)
            inputs, losses = [], []
            for target in y.chunk(micro):
                inp = torch.empty(rows, d1)
                dist.recv(inp, 0)
                inp.requires_grad_()
                losses.append(torch.nn.functional.mse_loss(stage(inp), target))
                inputs.append(inp)
            for inp, loss in reversed(list(zip(inputs, losses))):
                loss.backward()
                dist.send(inp.grad, 0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    port, batch, d0, d1, d2, micro, steps = (int(a) for a in sys.argv[1:8])
    mp.spawn(run, args=(2, port, batch, d0, d1, d2, micro, steps), nprocs=2)
