"""A private X display for the window's end-to-end checks (the Python ones; screenshot_test.sh does the same in sh).
Xvfb picks a free display itself (-displayfd), so checks started at once never race for one. Exits 77 (CTest's skip)
where Xvfb is not installed, saying so."""
import os
import shutil
import subprocess
import sys


def start_xvfb():
    """(the Xvfb process, its DISPLAY value)."""
    if shutil.which("Xvfb") is None:
        print("SKIPPED: Xvfb is not installed (apt-get install xvfb xauth libgl1-mesa-dri)")
        sys.exit(77)
    read_fd, write_fd = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1600x900x24", "-nolisten", "tcp"],
                              pass_fds=(write_fd,), stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        display = f.readline().strip()
    if not display:
        print("Xvfb did not start")
        sys.exit(1)
    return server, ":" + display
