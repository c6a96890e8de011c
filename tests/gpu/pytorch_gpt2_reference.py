#!/usr/bin/env python3
"""PyTorch reference for ShardScope's GPT-2 memory predictions: Hugging Face's GPT2LMHeadModel (eager attention, the
config's dropouts, training mode) on CUDA, trained with AdamW as ShardScope's plans run the loop (zero_grad first;
loss = cross_entropy(logits over every position, next tokens)), printing torch.cuda.memory_allocated(),
max_memory_allocated() and memory_reserved() at ShardScope's phases, and optionally the caching allocator's history
(--history FILE, as pytorch_reference.py). Needs PyTorch with CUDA and transformers (the GPU machine has both).

    python3 tests/gpu/pytorch_gpt2_reference.py --config assets/models/gpt2-tiny/config.json --batch 4 --seq 64
    shardscope-cli memory --model hf:assets/models/gpt2-tiny/config.json --batch 4 --seq 64 --loss cross-entropy \\
        --optimizer adamw --accounting pytorch-2 --device H200-141
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_reference import PhaseRecorder  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="a Hugging Face GPT-2 config.json")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--history", metavar="FILE")
    args = p.parse_args()

    import torch
    import torch.nn.functional as F
    import transformers

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    torch.manual_seed(1234)
    config = transformers.GPT2Config.from_json_file(args.config)
    config.use_cache = False
    phase = PhaseRecorder(torch, device, history=bool(args.history))

    base = torch.cuda.memory_allocated(device)
    try:
        model = transformers.GPT2LMHeadModel._from_config(config, attn_implementation="eager")
    except (AttributeError, TypeError):
        config._attn_implementation = "eager"
        model = transformers.GPT2LMHeadModel(config)
    model = model.to(device)
    attention = getattr(model.config, "_attn_implementation", None)
    model.train()
    phase("model_created", 0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    vocab = config.vocab_size
    for step in range(1, args.steps + 1):
        optimizer.zero_grad(set_to_none=True)
        ids = torch.randint(0, vocab, (args.batch, args.seq), device=device)
        targets = torch.randint(0, vocab, (args.batch, args.seq), device=device)
        loss = F.cross_entropy(model(ids).logits.view(-1, vocab), targets.view(-1))
        phase("forward", step)
        loss.backward()
        phase("before_step", step)
        optimizer.step()
        phase("after_step", step)
    result = {"torch": torch.__version__, "transformers": transformers.__version__,
              "gpu": torch.cuda.get_device_name(device), "attention": attention, "config": os.path.basename(os.path.dirname(args.config)),
              "batch": args.batch, "seq": args.seq, "base_allocated": base, "phases": phase.records}
    if args.history:
        phase.write_history(args.history, result)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
