#!/usr/bin/env python3
"""`shardscope-cli lessons` and `lessons check`: the nine lessons the classroom needs are listed with the public
JSON keys, every one of them holds against its own runs (so an engine change can never silently empty a lesson),
a failing claim exits 1 and a broken lesson file exits 2 naming the key."""
import json
import os
import subprocess
import sys
import tempfile

cli = sys.argv[1]
IDS = ["memory-anatomy", "ddp-doubles-memory", "dataparallel-imbalance", "zero-halves-adam", "fsdp-vs-zero3",
       "pipeline-bubble", "all-reduce", "tensor-parallel", "rescue-tips"]


def run(*args):
    return subprocess.run([cli, *args], capture_output=True, text=True)


listing = run("lessons", "--json")
assert listing.returncode == 0, listing.stderr
lessons = json.loads(listing.stdout)["lessons"]
assert [l["id"] for l in lessons] == IDS, [l["id"] for l in lessons]
for lesson in lessons:
    assert lesson["title"] and lesson["question"], lesson

check = run("lessons", "check", "--json")
report = json.loads(check.stdout)
failures = [(l["id"], [c for c in l["claims"] if not c["ok"]], l["problems"]) for l in report["lessons"] if not l["ok"]]
assert check.returncode == 0 and report["ok"] and not failures, json.dumps(failures, indent=1)
assert [l["id"] for l in report["lessons"]] == IDS
for lesson in report["lessons"]:
    assert len(lesson["claims"]) >= 2, lesson["id"]
    for claim in lesson["claims"]:
        assert set(claim) >= {"says", "check", "left", "op", "right", "ok"}, claim
        assert isinstance(claim["left"], (int, float)) and isinstance(claim["right"], (int, float)), claim

with tempfile.TemporaryDirectory() as tmp:
    scenario = {"model": {"spec": "mlp:1x1000"}, "training": {"batch": 8, "optimizer": "sgd"}, "cluster": {"world": 1},
                "strategy": {"name": "single"}, "accounting": {"mode": "pytorch-2"}}
    lesson = {"title": "t", "question": "q", "scenarios": {"one": {"scenario": scenario}},
              # 4,000,000 B of weight rounds up to 4,000,256 B: the claim below is false.
              "claims": [{"says": "false on purpose", "check": "one.allocated.model_created.rank0 < 4000000"}],
              "steps": [{"title": "a", "narration": "{one.peak.rank0}"}]}
    with open(os.path.join(tmp, "broken-claim.json"), "w") as f:
        json.dump(lesson, f)
    failing = run("lessons", "check", "--json", "--dir", tmp)
    assert failing.returncode == 1, (failing.returncode, failing.stderr)
    result = json.loads(failing.stdout)
    assert not result["ok"] and result["lessons"][0]["claims"][0]["left"] == 4004352, result
    lesson["steps"][0]["narate"] = "typo"
    with open(os.path.join(tmp, "broken-claim.json"), "w") as f:
        json.dump(lesson, f)
    broken = run("lessons", "check", "--dir", tmp)
    assert broken.returncode == 2 and "steps[0]: unknown key 'narate'" in broken.stderr, (broken.returncode, broken.stderr)
    unknown = run("lessons", "check", "no-such-lesson")
    assert unknown.returncode == 2 and "no lesson 'no-such-lesson'" in unknown.stderr, unknown.stderr
print("ok")
