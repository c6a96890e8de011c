#!/usr/bin/env python3
"""PyTorch's step time for a GPT-2 config on the GPU, eager, fp32, Adam: the model of check_gpt2_against_torch.py
(transformers' GPT2LMHeadModel op for op, dropout off) on the same language-model batches, each step timed
between two synchronisations with its batch already on the device. The GPU checks' `step_time_gpt2` sets it
beside ShardScope's step read off a recorded run of the same config (dropout off there too).

usage: gpt2_step_time.py CONFIG BATCH SEQ STEPS   (prints {"step_times_s": [...]})
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "torch")]  # the bundle's scripts/, or the source tree
os.environ.setdefault("SHARDSCOPE_TORCH_DEVICE", "cuda")
import torch  # noqa: E402
import check_gpt2_against_torch as gpt2  # noqa: E402


def main():
    config_path, batch, seq, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    gpt2.BATCH, gpt2.SEQ = batch, seq
    config = json.load(open(config_path))
    p = {k: v.to(gpt2.DEVICE).requires_grad_(True) for k, v in gpt2.initial_parameters(config).items()}
    optimizer = torch.optim.Adam(list(p.values()), lr=1e-4)
    def synchronize():
        if gpt2.DEVICE.type == "cuda":
            torch.cuda.synchronize()

    times = []
    for step in range(steps):
        ids, targets = gpt2.token_batch(step, config["vocab_size"])
        synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        gpt2.forward_loss(p, config, ids, targets).backward()
        optimizer.step()
        synchronize()
        times.append(time.perf_counter() - start)
    print(json.dumps({"step_times_s": times, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
