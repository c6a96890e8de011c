#!/usr/bin/env python3
"""The lesson audit must be able to fail: run gui_audit on tests/gui/broken_lesson (a narration that prints its
prediction's answer and ends in a word longer than its panel is wide) and expect exit 1 with each planted kind of
problem named. (Overlaps, faded colours and colours without a legend cannot be planted from a lesson file: the
window prevents them; test_gui_audit checks that the audit finds them in frames made to have them.)
usage: check_audit_fails.py GUI_AUDIT LESSONS_DIR"""
import subprocess
import sys

audit, lessons = sys.argv[1], sys.argv[2]
p = subprocess.run([audit, "--lessons-dir", lessons, "--size", "1600x900", "--font-scale", "2"], capture_output=True, text=True,
                   timeout=280)
print(p.stdout[-4000:], p.stderr[-2000:])
expected = {"answer shown": "the narration prints the answer while it is hidden",
            "cut": "the narration's last word runs past its panel's edge"}
missing = [f"{kind} ({why})" for kind, why in expected.items() if f": {kind}: " not in p.stdout]
if p.returncode != 1 or missing:
    sys.exit(f"FAILED: exit {p.returncode} (want 1); not found: {', '.join(missing) or 'none'}")
print("ok: the audit found every planted problem and exited 1")
