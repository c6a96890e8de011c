#!/usr/bin/env python3
"""The include rules of the architecture (README "Architecture"), checked over the source tree, so a wrong arrow
fails CI even where no compile guard reaches (a header-only include, a file not yet in any target):
  - engine/ and sim/ include nothing from app/ (its include roots cli/, gui/, lessons/, pipeline/, or app/...);
  - engine/ includes nothing from sim/;
  - a GUI panel or widget (app/gui/panels/, app/gui/widgets/, presenter mode's *_panel.cpp) includes no executor
    (exec/...);
  - the CUDA backend (engine/exec/cuda/) includes nothing from the CPU backend (exec/cpu/): what both compute by the
    same rule lives in exec/shared_kernels/;
  - the core (engine/ outside exec/, net/ and trace/stream/) includes no executor, network or stream header.

usage: check_layers.py ROOT           exit 1 and one line per broken rule
       check_layers.py --self-test    plants each kind of violation in a scratch tree and checks each is found
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
APP_ROOTS = ("app/", "cli/", "gui/", "lessons/", "pipeline/")


def rules():
    """(name, applies to a path relative to ROOT, forbids an include) triples."""
    def under(*prefixes):
        return lambda path: path.startswith(prefixes)

    def panel(path):
        return path.startswith(("app/gui/panels/", "app/gui/widgets/")) or (
            path.startswith("app/gui/presenter/") and path.endswith("_panel.cpp"))

    def core(path):
        return path.startswith("engine/") and not path.startswith(
            ("engine/exec/", "engine/net/", "engine/trace/stream/"))

    return [
        ("engine/ and sim/ must not include app/", under("engine/", "sim/"),
         lambda inc: inc.startswith(APP_ROOTS)),
        ("engine/ must not include sim/", under("engine/"), lambda inc: inc.startswith("sim/")),
        ("a GUI panel must not include an executor", panel, lambda inc: inc.startswith("exec/")),
        ("exec/cuda must not include exec/cpu (shared rules live in exec/shared_kernels/)", under("engine/exec/cuda/"),
         lambda inc: inc.startswith("exec/cpu/")),
        ("the core must not include exec/, net/ or trace/stream/", core,
         lambda inc: inc.startswith(("exec/", "net/", "trace/stream/"))),
    ]


def violations(root):
    found = []
    for folder in ("engine", "sim", "app"):
        for base, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(base, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for include in INCLUDE.findall(text):
                    for rule, applies, forbids in rules():
                        if applies(rel) and forbids(include):
                            found.append(f"{rel}: #include \"{include}\": {rule}")
    return found


def self_test():
    """Each rule must be able to fail: a scratch tree with one planted violation per rule, and one clean file."""
    planted = {
        "engine/model/bad_app.h": "gui/palette.h",
        "sim/bad_app.cpp": "cli/main.h",
        "engine/strategy/bad_sim.cpp": "sim/simulator.h",
        "app/gui/panels/bad_panel.cpp": "exec/executor.h",
        "app/gui/presenter/bad_narration_panel.cpp": "exec/cpu/cpu_backend.h",
        "engine/exec/cuda/bad_cuda.cpp": "exec/cpu/blas_gemm.h",
        "engine/scenario/bad_core.cpp": "net/endpoint.h",
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, include in planted.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(f'// planted\n#include "{include}"\n')
        os.makedirs(os.path.join(root, "engine/exec/cuda"), exist_ok=True)
        with open(os.path.join(root, "engine/exec/cuda/fine.cpp"), "w") as f:
            f.write('#include "exec/shared_kernels/ring_chunks.h"\n#include "exec/backend.h"\n')
        found = violations(root)
    missing = [rel for rel in planted if not any(v.startswith(rel + ":") for v in found)]
    wrong = [v for v in found if v.split(":")[0] not in planted]
    if missing or wrong:
        print("self-test failed: not found " + ", ".join(missing) + "; wrongly found " + ", ".join(wrong))
        return 1
    print(f"self-test: each of the {len(planted)} planted violations found, the clean file passed")
    return 0


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if sys.argv[1] == "--self-test":
        return self_test()
    found = violations(sys.argv[1])
    for line in found:
        print(line)
    if found:
        return 1
    print("layer rules hold: engine/ and sim/ include nothing from app/, panels no executor, exec/cuda nothing from "
          "exec/cpu, the core no executor or network header")
    return 0


if __name__ == "__main__":
    sys.exit(main())
