#!/usr/bin/env python3
"""`shardscope-cli compare` on the hand-crafted traces of craft_traces.py: events naming what the plan lacks are
ignored (the peaks are the real run's), a header claiming 10^12 ops and a file too big for the memory at hand are
named errors with exit code 2 — never a signal, never a bare std::bad_alloc. A header whose "same_as" copies add up
to 78 M ops is refused by `trace info`, `trace export` and `compare` with exit 2 naming kMaxTracePlanOps within two
seconds (before the limit: 25 s and 9 GiB); 131,072 op-begins that never end, and as many ops arriving in reverse
time order, open within two seconds (before: 31 s and more than 100 s). A header's texts (command line, source, device
names, host) reach the terminal through printable(): escape sequences escaped, a 1 MB host name cut.

Usage: check_untrusted_traces.py CLI DIR [--sanitized] (DIR holds craft_traces.py's files; --sanitized: the CLI is
built with AddressSanitizer, which reserves terabytes of address space, so the run under a 512 MiB limit is skipped).
"""
import json
import os
import resource
import subprocess
import sys
import time

cli, folder = sys.argv[1], sys.argv[2]
sanitized = "--sanitized" in sys.argv
# AddressSanitizer makes the CLI several times slower; the limits are about 30 times the unsanitised figures.
seconds = 10 if sanitized else 2


def compare(name, limit_bytes=None):
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run([cli, "compare", os.path.join(folder, name), os.path.join(folder, "base.sstrace"), "--json"],
                          capture_output=True, text=True, env=env, preexec_fn=limit if limit_bytes else None)


for name in ("op-past-plan.sstrace", "rank-2e9.sstrace"):
    done = compare(name)
    assert done.returncode == 0, (name, done.returncode, done.stderr)
    report = json.loads(done.stdout)
    assert report["a"]["ranks"] == 2, (name, report["a"])
    assert report["a"]["peak_bytes"] == report["b"]["peak_bytes"], (name, report["a"], report["b"])
    assert all(rank["difference"] and not any(rank["difference"].values()) for rank in report["ranks"]), report["ranks"]
    print(f"ok: {name}: read, its events naming what the plan lacks ignored (peaks as the real run's)")

done = compare("header-1e12-ops.sstrace")
assert done.returncode == 2, (done.returncode, done.stderr)
assert "ops.count 1000000000000 is more than the header's" in done.stderr, done.stderr
print("ok: header-1e12-ops.sstrace: exit 2,", done.stderr.strip())


def run(args, limit_bytes=None):
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    started = time.monotonic()
    done = subprocess.run([cli] + args, capture_output=True, text=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
                          preexec_fn=limit if limit_bytes and not sanitized else None)
    return done, time.monotonic() - started


# Header texts through printable(): no ESC (0x1b), BEL or C1 CSI (U+009B) reaches the terminal, and the 1 MB host
# is cut to 256 bytes and a note of what was left out.
done, _ = run(["trace", "info", os.path.join(folder, "escapes.sstrace")])
assert done.returncode == 0, (done.returncode, done.stderr)
for control in ("\x1b", "\x07", "\u009b"):
    assert control not in done.stdout, (control, done.stdout[:2000])
assert "command line: shardscope-cli run \\x1b[2J\\x1b]0;pwned\\x07" in done.stdout, done.stdout[:2000]
assert "source:       simulator\\x1b[31m" in done.stdout, done.stdout[:2000]
assert "rank 0: H100\\x1b[8m\\u009b31m" in done.stdout, done.stdout[:2000]
assert "host:         " + "h" * 256 + "… (999744 more bytes)" in done.stdout, done.stdout[:2000]
assert len(done.stdout) < 4000, len(done.stdout)
print("ok: escapes.sstrace: trace info shows its header texts escaped and cut")

same_as = os.path.join(folder, "same-as.sstrace")
for args in (["trace", "info", same_as], ["trace", "export", same_as, "--chrome", os.path.join(folder, "same-as.json")],
             ["compare", same_as, os.path.join(folder, "base.sstrace")]):
    # 512 MiB of address space: the copies (9 GiB) cannot have been made.
    done, took = run(args, limit_bytes=512 << 20)
    assert done.returncode == 2, (args, done.returncode, done.stderr)
    assert "78361959 ops and 0 tensors in all" in done.stderr and "(kMaxTracePlanOps)" in done.stderr, done.stderr
    assert took < seconds, (args, took)
    print(f"ok: {args[0]} {args[1]}: same-as.sstrace refused in {took:.2f} s,", done.stderr.strip()[:160])

for name in ("open-begins.sstrace", "late-begins.sstrace"):
    done, took = run(["compare", os.path.join(folder, name), os.path.join(folder, "base.sstrace"), "--json"])
    assert done.returncode == 0, (name, done.returncode, done.stderr)
    assert took < seconds, (name, took)
    print(f"ok: {name}: compared in {took:.2f} s")
done, _ = run(["trace", "check", os.path.join(folder, "late-begins.sstrace")])
# 131,072 ops in reverse order: the first and the 256 after it are placed; the other 130,815 begins are ignored.
assert done.returncode == 1 and "damaged: 130815 of 262144 events" in done.stdout and "256 spans late" in done.stdout, done
print("ok: late-begins.sstrace: trace check:", done.stdout.strip())

if sanitized:
    print("skipped: too-big.sstrace under 512 MiB of address space (AddressSanitizer needs more)")
    sys.exit(0)
# 8,000,000 ops of 120 B (plan/op.h) are 960 MB: 512 MiB cannot hold them, whatever else the process has mapped (1 GiB
# did until OpenBLAS was no longer loaded at start-up and an op shrank from 136 B).
done = compare("too-big.sstrace", limit_bytes=512 << 20)
assert done.returncode == 2, (done.returncode, done.stderr)
assert "not enough memory" in done.stderr and "too-big.sstrace" in done.stderr, done.stderr
print("ok: too-big.sstrace under 512 MiB of address space: exit 2,", done.stderr.strip())
