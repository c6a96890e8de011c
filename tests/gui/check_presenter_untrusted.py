#!/usr/bin/env python3
"""Presenter mode with lessons it cannot fully use (issue 41), rendered under Xvfb by screenshot_test.sh:
- a narration word of 17,000 characters is cut, not drawn whole (ImGui's 16-bit vertex index assertion aborted the
  window: 4 vertices per byte, at most 65,536 per draw command): exit 0 and a picture with the narration's text;
- `--screenshot` of a lesson whose narration cannot be evaluated ({1e300|int}) or of an unknown lesson id exits 2
  with the message on stderr (before: exit 0, the error only in the picture).
The lessons are written here, into a temporary folder.
Usage: check_presenter_untrusted.py SHARDSCOPE CHECK_SCREENSHOT SCREENSHOT_TEST_SH OUT_DIR"""
import json
import os
import subprocess
import sys
import tempfile

app, checker, script, out = sys.argv[1:5]
os.makedirs(out, exist_ok=True)


def lesson(title, narration):
    return {"order": 1, "title": title, "question": "q?", "scenarios": {"demo": {"all_reduce_demo": [[1, 2], [3, 4]]}},
            "claims": [], "steps": [{"title": "a", "narration": narration}]}


def shoot(lessons_dir, lesson_id, png, *colours):
    done = subprocess.run(["sh", script, app, checker, os.path.join(out, png), "--lessons-dir", lessons_dir,
                           "--lesson", lesson_id, "--", *colours], capture_output=True, text=True, timeout=100)
    if "SKIPPED" in done.stdout:
        print(done.stdout.strip())
        sys.exit(77)
    return done


with tempfile.TemporaryDirectory() as tmp:
    long_dir, broken_dir = os.path.join(tmp, "long"), os.path.join(tmp, "broken")
    os.makedirs(long_dir)
    os.makedirs(broken_dir)
    with open(os.path.join(long_dir, "long-word.json"), "w") as f:
        json.dump(lesson("Long word", "A word: " + "x" * 17000 + " end."), f)
    with open(os.path.join(broken_dir, "broken.json"), "w") as f:
        json.dump(lesson("Broken", "It is {1e300|int}."), f)

    # The narration's text colour (#141414) on screen: the cut word was drawn.
    done = shoot(long_dir, "long-word", "gui_long_word.png", "141414:100")
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    print("ok: a 17,000-character narration word is drawn cut:", done.stdout.strip().splitlines()[-1])

    done = shoot(broken_dir, "broken", "gui_broken_lesson.png", "141414:1")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "lesson 'broken': steps[0]: narration: 1e+300 cannot be shown in format 'int'" in done.stderr, done.stderr
    print("ok: a lesson that cannot be evaluated: exit 2,", done.stderr.strip())

    done = shoot(broken_dir, "no-such-lesson", "gui_no_lesson.png", "141414:1")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "--lesson: no lesson 'no-such-lesson'" in done.stderr, done.stderr
    print("ok: an unknown lesson: exit 2,", done.stderr.strip())
