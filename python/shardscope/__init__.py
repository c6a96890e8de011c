"""ShardScope's Python side: code that runs inside a user's PyTorch process. Standard library and torch only; run
from a checkout with PYTHONPATH=python.

    python3 -m shardscope.record --out run.sstrace -- train.py ARGS     # record a run as a .sstrace (record.py)
    with shardscope.record("run.sstrace"): ...                          # the same from a notebook
    python3 -m shardscope.calibrate --out PROFILE.json                  # a device profile (calibrate.py)

trace_writer.py writes the .sstrace format (FORMAT.md under engine/trace/), trace_reader.py reads it back."""


def __getattr__(name):
    # shardscope.record is the recorder module, callable as record(): imported on first use, so that
    # `python -m shardscope.record` does not import it twice.
    if name == "record":
        import importlib
        return importlib.import_module(".record", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
