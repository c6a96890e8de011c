# A user's script: Hugging Face GPT-2 (2 layers, width 256, vocab 8192, seq 256, batch 4, dropout off), AdamW, 3 steps
# on CUDA, printing memory_allocated at ShardScope's phase points and the step times.
import sys, time, torch, transformers
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
cfg = transformers.GPT2Config(n_positions=256, n_embd=256, n_layer=2, n_head=4, vocab_size=8192, resid_pdrop=0.0,
                              embd_pdrop=0.0, attn_pdrop=0.0)
torch.manual_seed(0)
model = transformers.AutoModelForCausalLM.from_config(cfg).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
times = []
for step in range(1, steps + 1):
    opt.zero_grad(set_to_none=True)
    ids = torch.randint(0, 8192, (4, 256), device="cuda")
    torch.cuda.synchronize(); t0 = time.perf_counter()
    loss = model(input_ids=ids, labels=ids).loss
    print("memory forward", step, torch.cuda.memory_allocated(), flush=True)
    loss.backward()
    print("memory before_step", step, torch.cuda.memory_allocated(), flush=True)
    opt.step()
    torch.cuda.synchronize(); times.append(time.perf_counter() - t0)
    print("memory after_step", step, torch.cuda.memory_allocated(), flush=True)
print("step_times_ms", " ".join(f"{t*1e3:.2f}" for t in times), flush=True)
