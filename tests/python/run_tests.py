"""Runs the Python tests for CTest: `python3 run_tests.py PATTERN` discovers tests/python/PATTERN and runs them
(SHARDSCOPE_CLI set by CTest to the built CLI). Exits 77 (CTest: skipped) where this Python has no torch."""
import os
import sys
import unittest

try:
    import torch  # noqa: F401
except ImportError:
    print("skipped: this Python cannot import torch (Debian: apt install python3-torch; /usr/bin/python3 has it)")
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
suite = unittest.defaultTestLoader.discover(here, pattern=sys.argv[1] if len(sys.argv) > 1 else "test*.py", top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
