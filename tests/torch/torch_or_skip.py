"""Imported first by the checks that need PyTorch: makes `import torch` work or skips the check, saying why.
Debian's python3-torch lives in /usr/bin/python3's packages; another python3 first on PATH (pyenv) lacks it, so the
check is run again under /usr/bin/python3 once before it gives up with exit 77 (CTest's SKIP_RETURN_CODE)."""
import os
import sys

try:
    import torch  # noqa: F401
except ImportError as error:
    system = "/usr/bin/python3"
    if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system) and not os.environ.get("SHARDSCOPE_TORCH_REEXEC"):
        os.environ["SHARDSCOPE_TORCH_REEXEC"] = "1"
        os.execv(system, [system, *sys.argv])
    print(f"SKIP: PyTorch is not importable ({error}); install python3-torch", file=sys.stderr)
    sys.exit(77)
