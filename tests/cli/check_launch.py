#!/usr/bin/env python3
"""launch-check with several processes on this machine: a torchrun-style launch (3 processes, one per GPU, torchrun's
agent holding MASTER_PORT), a SLURM-style one (2 tasks on one node, CUDA_VISIBLE_DEVICES split between them), the
flags, a process with the wrong job token that must not stop the others, and a single process. Every expected value
is the launcher's variable meaning, written out here (rank, world, the port torchrun leaves free, the GPU each
process keeps).

usage: check_launch.py SHARDSCOPE_CLI
"""
import json
import os
import socket
import subprocess
import sys

CLI = sys.argv[1]
TOKEN = "0123456789abcdef-launch-check"
LAUNCH_KEYS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
               "TORCHELASTIC_USE_AGENT_STORE", "CUDA_VISIBLE_DEVICES", "SHARDSCOPE_TOKEN")
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def free_port_pair():
    """A port p with p + 1 also free (torchrun's agent would hold p)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 65535:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise SystemExit("no free pair of ports")


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_KEYS and not k.startswith("SLURM_")}
    env.update(extra)
    return env


def launch(envs, args=("--json", "--timeout", "20")):
    procs = [subprocess.Popen([CLI, "launch-check", *args], env=clean_env(e), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for e in envs]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        results.append((p.returncode, out, err))
    return results


def reports(results, what):
    parsed = []
    for i, (rc, out, err) in enumerate(results):
        check(rc == 0, f"{what}: process {i} exit {rc}: {err.strip()}")
        try:
            parsed.append(json.loads(out))
        except json.JSONDecodeError:
            check(False, f"{what}: process {i} printed no JSON: {out!r} {err!r}")
            parsed.append({})
    return parsed


# torchrun --nproc-per-node 3 --master-port P (static rendezvous): the agent holds P, the workers get RANK etc.
port = free_port_pair()
envs = [{"RANK": str(r), "WORLD_SIZE": "3", "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1",
         "MASTER_PORT": str(port), "TORCHELASTIC_USE_AGENT_STORE": "True", "SHARDSCOPE_TOKEN": TOKEN} for r in range(3)]
for r, rep in enumerate(reports(launch(envs), "torchrun")):
    check(rep.get("source") == "torchrun", f"torchrun: process {r} source {rep.get('source')}")
    check(rep.get("process_rank") == r and rep.get("processes") == 3, f"torchrun: process {r} place {rep}")
    check(rep.get("master") == f"127.0.0.1:{port + 1}", f"torchrun: process {r} master {rep.get('master')} (want port {port + 1})")
    check(rep.get("cuda_visible_devices") == str(r), f"torchrun: process {r} pinned to {rep.get('cuda_visible_devices')}")
    check(rep.get("joined") is True, f"torchrun: process {r} did not join")

# srun -N 1 --ntasks-per-node 2 with both GPUs visible to both tasks: each keeps the one of its SLURM_LOCALID.
port = free_port_pair()
envs = [{"SLURM_PROCID": str(r), "SLURM_NTASKS": "2", "SLURM_LOCALID": str(r), "SLURM_NODEID": "0",
         "SLURM_TASKS_PER_NODE": "2", "SLURM_JOB_NODELIST": "localhost", "MASTER_PORT": str(port),
         "CUDA_VISIBLE_DEVICES": "6,7", "SHARDSCOPE_TOKEN": TOKEN} for r in range(2)]
for r, rep in enumerate(reports(launch(envs), "slurm")):
    check(rep.get("source") == "slurm" and rep.get("process_rank") == r, f"slurm: process {r} place {rep}")
    check(rep.get("master") == f"localhost:{port}", f"slurm: process {r} master {rep.get('master')}")
    check(rep.get("cuda_visible_devices") == ["6", "7"][r], f"slurm: process {r} pinned to {rep.get('cuda_visible_devices')}")
    check(rep.get("local_processes") == 2, f"slurm: process {r} local processes {rep.get('local_processes')}")

# Flags win over the environment: RANK/WORLD_SIZE set to nonsense are not read when --nnodes is given.
port = free_port_pair()
flag_runs = [subprocess.Popen([CLI, "launch-check", "--json", "--timeout", "20", "--nnodes", "2", "--node-rank", str(r),
                               "--master", f"127.0.0.1:{port}", "--token", TOKEN],
                              env=clean_env({"RANK": "9", "WORLD_SIZE": "x"}), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
flag_results = [(p.returncode, *p.communicate(timeout=60)) for p in flag_runs]
flag_results = [(p.returncode, out, err) for p, (_, out, err) in zip(flag_runs, flag_results)]
for r, rep in enumerate(reports(flag_results, "flags")):
    check(rep.get("source") == "flags" and rep.get("process_rank") == r, f"flags: process {r} place {rep}")

# A process with another token is refused; the real second process still joins.
port = free_port_pair()
base = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
master = subprocess.Popen([CLI, "launch-check", "--json", "--timeout", "20"], env=clean_env({**base, "RANK": "0", "SHARDSCOPE_TOKEN": TOKEN}),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
intruder = launch([{**base, "RANK": "1", "SHARDSCOPE_TOKEN": "another-token-of-16+chars"}], ("--json", "--timeout", "3"))
check(intruder[0][0] == 3 and "wrong job token" in intruder[0][2], f"wrong token: exit {intruder[0][0]}, {intruder[0][2].strip()}")
honest = launch([{**base, "RANK": "1", "SHARDSCOPE_TOKEN": TOKEN}])
out, err = master.communicate(timeout=60)
check(master.returncode == 0, f"wrong token: the master failed: {err.strip()}")
check(honest[0][0] == 0, f"wrong token: the real process failed: {honest[0][2].strip()}")
if master.returncode == 0:
    check(len(json.loads(out).get("refused", [])) == 1, f"wrong token: the master's refusals {out}")

# One process, no launcher: nothing to join. A broken variable: exit 2 naming it.
single = launch([{}])
check(single[0][0] == 0 and json.loads(single[0][1]).get("processes") == 1, f"single process: {single[0]}")
bad = launch([{"RANK": "4", "WORLD_SIZE": "2"}])
check(bad[0][0] == 2 and "RANK=4 is not below WORLD_SIZE=2" in bad[0][2], f"bad RANK: {bad[0]}")
cpu = subprocess.run([CLI, "run", "--model", "mlp:2x8", "--backend", "cpu"], env=clean_env({"RANK": "1", "WORLD_SIZE": "2"}),
                     capture_output=True, text=True)
check(cpu.returncode == 2 and "started 2 processes" in cpu.stderr, f"cpu backend under torchrun: {cpu.returncode} {cpu.stderr}")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("launch-check: torchrun, SLURM, flags, a wrong token and a single process all behave")
