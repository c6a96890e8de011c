#!/usr/bin/env python3
"""A class fits in 50 minutes: the lessons' short paths together are at most 30 steps (about 1.5 minutes a step)
and every short-path narration at most 60 words (a placeholder counts as its figure: one word for a count, a plain
number or a ratio, two for a size, time or share with its unit); the
CLI's `lessons --json` gives each lesson's `steps` and `short_path_steps`, agreeing with the files.
usage: check_class_length.py SHARDSCOPE_CLI LESSONS_DIR"""
import glob
import json
import os
import re
import subprocess
import sys

cli, lessons_dir = sys.argv[1], sys.argv[2]
problems = []
total_short = 0
files = {}
for path in sorted(glob.glob(os.path.join(lessons_dir, "*.json"))):
    lesson = json.load(open(path))
    lesson_id = os.path.splitext(os.path.basename(path))[0]
    steps = lesson["steps"]
    short = [i for i, s in enumerate(steps) if s.get("short")] or list(range(len(steps)))
    files[lesson_id] = (len(steps), len(short))
    total_short += len(short)
    for i in short:
        text = re.sub(r"\{[^{}|]*\|(int|num|x)\}", "figure", steps[i]["narration"])
        text = re.sub(r"\{[^{}]*\}", "figure unit", text)
        words = len(text.split())
        if words > 60:
            problems.append(f"{lesson_id} step {i + 1}: {words} words on the short path (at most 60)")
if total_short > 30:
    problems.append(f"the short paths hold {total_short} steps (at most 30 for a 50-minute class)")
listed = json.loads(subprocess.run([cli, "lessons", "--dir", lessons_dir, "--json"], capture_output=True, text=True,
                                   check=True).stdout)["lessons"]
for entry in listed:
    want = files.get(entry["id"])
    if want != (entry.get("steps"), entry.get("short_path_steps")):
        problems.append(f"lessons --json says {entry['id']} has {entry.get('steps')} steps, {entry.get('short_path_steps')} "
                        f"short; its file {want}")
for p in problems:
    print(p)
print(f"{len(files)} lessons, {total_short} short-path steps (about {1.5 * total_short:.0f} minutes)")
sys.exit(1 if problems else 0)
