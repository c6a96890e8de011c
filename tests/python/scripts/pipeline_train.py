"""A hand-written 2-stage pipeline over gloo (GPipe order: every micro-batch's forward, then every backward in
micro-batch order, as torch.distributed.pipelining's ScheduleGPipe), ranks started with torch.multiprocessing.spawn.
Stage 0: Linear(d0, d1) + ReLU; stage 1: Linear(d1, d2) and the MSE loss. SGD with momentum.
argv: port batch d0 d1 d2 micro_batches steps. The device is $TRAIN_DEVICE (default cpu); on cuda rank r uses GPU
r mod the GPU count (on one GPU both stages share it, as gloo allows).

As a stage of torch.distributed.pipelining keeps them (stage.py: forward_one_chunk stores fwd_cache[chunk],
backward_one_chunk pops it), each micro-batch's tensors are held from its forward to its backward and dropped
there: the stage output (stage 0), the received input and the loss (stage 1); the received gradient and the input's
gradient live only while that backward runs and is sent. dist.recv fills a tensor the caller allocated.

On CUDA the tensors travel through host memory: gloo's send / recv hand the tensor's data pointer to its TCP
transport (ProcessGroupGloo::send / recv, torch/csrc/distributed/c10d/ProcessGroupGloo.cpp), which reads and writes
host memory only. The device then holds what it would with a device-side recv (NCCL): the received tensor, here the
`.to(device)` copy of the host buffer, of the same size; the sent tensor's host copy is not device memory."""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def send(tensor, peer):
    dist.send(tensor.cpu() if tensor.is_cuda else tensor, peer)


def recv(shape, peer, device):
    """A tensor of `shape` on `device` holding what `peer` sent."""
    if device.type == "cpu":
        tensor = torch.empty(shape)
        dist.recv(tensor, peer)
        return tensor
    host = torch.empty(shape)
    dist.recv(host, peer)
    return host.to(device)


def first_stage_forward(stage, chunk, peer):
    out = stage(chunk)
    send(out.detach(), peer)
    return out


def first_stage_backward(out, peer):
    grad = recv(out.shape, peer, out.device)
    out.backward(grad)


def last_stage_forward(stage, target, rows, width, peer):
    inp = recv((rows, width), peer, target.device)
    inp.requires_grad_()
    return inp, torch.nn.functional.mse_loss(stage(inp), target)


def last_stage_backward(inp, loss, peer):
    loss.backward()
    send(inp.grad, peer)


def run(rank, world, port, batch, d0, d1, d2, micro, steps):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    device = torch.device(os.environ.get("TRAIN_DEVICE", "cpu"))
    if device.type == "cuda":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    if rank == 0:
        stage = torch.nn.Sequential(torch.nn.Linear(d0, d1), torch.nn.ReLU())
    else:
        stage = torch.nn.Sequential(torch.nn.Linear(d1, d2))
    stage.to(device)
    optimizer = torch.optim.SGD(stage.parameters(), lr=0.01, momentum=0.9)
    rows = batch // micro
    for step in range(steps):
        if rank == 0:
            x = torch.randn(batch, d0, device=device)
            outputs = [first_stage_forward(stage, chunk, 1) for chunk in x.chunk(micro)]
            while outputs:
                first_stage_backward(outputs.pop(0), 1)
        else:
            y = torch.randn(batch, d2, device=device)
            held = [last_stage_forward(stage, target, rows, d1, 0) for target in y.chunk(micro)]
            while held:
                last_stage_backward(*held.pop(0), 0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    port, batch, d0, d1, d2, micro, steps = (int(a) for a in sys.argv[1:8])
    mp.spawn(run, args=(2, port, batch, d0, d1, d2, micro, steps), nprocs=2)
