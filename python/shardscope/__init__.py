"""ShardScope's Python side: code that runs inside a user's PyTorch process (the device-profile calibration now;
the recorder later). Standard library and torch only; run from a checkout with PYTHONPATH=python."""
