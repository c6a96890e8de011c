#!/usr/bin/env python3
"""Settles by measurement how many cuBLAS workspaces PyTorch 2.x holds in torch.cuda.memory_allocated(): one per
thread that runs a GEMM (the main thread's forward, the autograd engine's device thread in backward), or one.

PyTorch 2.x allocates the cuBLAS workspace through the caching allocator (aten/src/ATen/cuda/CublasHandlePool.cpp:
getCurrentCUDABlasHandle → cublasSetWorkspace with a buffer from getNewWorkspace, cached per (handle, stream)), and
cuBLAS handles come from a per-thread pool. Workspaces persist while tensors are freed, so after each GEMM and
deleting every tensor it made, memory_allocated() − baseline is the workspaces held. Prints one JSON line.
"""
import json
import os
import threading

import torch


def held(baseline):
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated() - baseline


def main():
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    a = torch.randn(1024, 1024, device=device)
    b = torch.randn(1024, 1024, device=device)
    baseline = held(0)
    steps = {}

    c = a @ b
    del c
    steps["main_thread_first_gemm"] = held(baseline)
    c = a @ b
    del c
    steps["main_thread_second_gemm"] = held(baseline)

    def backward():
        w = torch.randn(1024, 1024, device=device, requires_grad=True)
        x = torch.randn(1024, 1024, device=device, requires_grad=True)
        y = (x @ w).sum()
        y.backward()  # the GEMMs of backward run on the autograd engine's thread for this device
        del y
        w.grad = None
        x.grad = None
        del w, x

    # The autograd thread before any other: a thread that has ended hands its cuBLAS handle back to the pool, and
    # the next thread to ask takes it with the workspace cached for it, so asking after one has ended would hide
    # whether the autograd thread keeps a workspace of its own.
    backward()
    steps["after_backward"] = held(baseline)
    backward()
    steps["after_second_backward"] = held(baseline)

    def other():
        d = a @ b
        del d
        torch.cuda.synchronize()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    steps["after_gemm_on_another_thread"] = held(baseline)

    main_ws = steps["main_thread_first_gemm"]
    backward_ws = steps["after_backward"] - steps["main_thread_second_gemm"]
    thread_ws = steps["after_gemm_on_another_thread"] - steps["after_second_backward"]
    per_thread = thread_ws > 0 and backward_ws > 0
    answer = (f"one workspace per thread that runs a GEMM: main {main_ws} B, another thread +{thread_ws} B, autograd "
              f"thread +{backward_ws} B" if per_thread else
              f"not per thread: main {main_ws} B, another thread +{thread_ws} B, autograd thread +{backward_ws} B")
    print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(device),
                      "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
                      "held_after": steps, "main_workspace_bytes": main_ws, "extra_thread_workspace_bytes": thread_ws,
                      "autograd_thread_workspace_bytes": backward_ws, "per_thread": per_thread, "answer": answer}))


if __name__ == "__main__":
    main()
