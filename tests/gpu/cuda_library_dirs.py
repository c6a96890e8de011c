#!/usr/bin/env python3
"""Prints the folders (':'-joined) holding the CUDA runtime, cuBLAS(Lt) and NCCL inside this Python's environment
(PyTorch's nvidia-* wheels: site-packages/nvidia/**/lib*), for LD_LIBRARY_PATH on the GPU machine, where the GPU
bundle does not carry them (tests/gpu/make_bundle.sh). Prints nothing where there are none."""
import glob
import os
import site
import sys

roots = set(site.getsitepackages() + [site.getusersitepackages()] + [p for p in sys.path if p.endswith("-packages")])
wanted = ("libcudart.so.", "libcublas.so.", "libcublasLt.so.", "libnccl.so.")
dirs = []
for root in roots:
    for path in glob.glob(os.path.join(root, "nvidia", "**", "lib*.so*"), recursive=True):
        if os.path.basename(path).startswith(wanted) and os.path.dirname(path) not in dirs:
            dirs.append(os.path.dirname(path))
print(":".join(dirs))
