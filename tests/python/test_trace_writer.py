"""The Python .sstrace writer against the format's reference: the worked example of FORMAT.md (engine/trace/) byte
for byte, a round trip through the Python reader, and the C++ reader (shardscope-cli trace check / info)."""
import os
import random
import re
import tempfile
import unittest

import helpers
from shardscope import trace_reader as tr
from shardscope import trace_writer as tw


def format_doc():
    """The format's reference, FORMAT.md under engine/trace/ (engine/trace/file/ since the trace code was split)."""
    for parts in (("engine", "trace", "file", "FORMAT.md"), ("engine", "trace", "FORMAT.md")):
        path = os.path.join(helpers.REPO, *parts)
        if os.path.exists(path):
            return path
    raise unittest.SkipTest("FORMAT.md not found under engine/trace/")


def example_bytes(marker):
    with open(format_doc(), encoding="utf-8") as f:
        text = f.read()
    block = text.split(f"<!-- {marker}-begin -->")[1].split(f"<!-- {marker}-end -->")[0]
    out = bytearray()
    for line in block.splitlines():
        if re.match(r"^[0-9a-f]{4}:", line):
            out += bytes(int(b, 16) for b in line.split("|")[0].split(":", 1)[1].split())
    return bytes(out)


def example_header():
    header = tw.make_header(source="example", scenario_json="{}", accounting_rules="exact",
                            devices=[{"rank": 0, "name": "CPU"}, {"rank": 1, "name": "CPU"}], host="lab-pc",
                            recorded_at="2026-11-25T20:00:00Z")
    header["tool_version"] = "ShardScope (example)"
    return header


class WorkedExample(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "example.sstrace")

    def tearDown(self):
        self.dir.cleanup()

    def write_example(self):
        w = tw.TraceWriter(self.path, example_header(), flush_interval_s=0)
        w.event(tw.ALLOC, 0, 1000, category=tw.PARAMETERS, bytes=4096, allocated_after=4096, reserved_after=4096)
        w.event(tw.PHASE, 1, 1500, step=1, text="forward")
        w.event(tw.RUN_END, -1, 2500, text="ok")
        w.close()
        with open(self.path, "rb") as f:
            return f.read()

    def test_writes_the_documented_bytes(self):
        expected = example_bytes("example-hex")
        self.assertEqual(len(expected), 514)
        self.assertEqual(self.write_example(), expected)

    def test_a_header_without_scenario_text_is_refused_before_any_file(self):
        # FORMAT.md: scenario_json is a string; the C++ reader calls any other value damaged
        with self.assertRaisesRegex(TypeError, "scenario_json must be a string"):
            tw.make_header(source="example", scenario_json=None, accounting_rules="exact", devices=[])
        self.assertFalse(os.path.exists(self.path))

    def test_crc_of_an_end_record(self):
        self.assertEqual(tw.encode_record(tw.RECORD_END, b""), bytes.fromhex("03003c41f46a"))

    def test_varints_and_zigzag(self):
        for value, encoded in ((1000, "e807"), (8192, "8040"), (0, "00"), (127, "7f"), (128, "8001")):
            out = bytearray()
            tw.put_varint(out, value)
            self.assertEqual(out.hex(), encoded)
        self.assertEqual([tw.zigzag(n) for n in (0, -1, 1, -2, 500)], [0, 1, 2, 3, 1000])

    def test_reader_reads_the_example_and_its_version_1_form(self):
        self.write_example()
        trace = tr.read_trace(self.path)
        self.assertTrue(trace.complete)
        self.assertEqual([(e.kind, e.rank, e.t_ns, e.text) for e in trace.events],
                         [(tw.ALLOC, 0, 1000, ""), (tw.PHASE, 1, 1500, "forward"), (tw.RUN_END, -1, 2500, "ok")])
        v1 = os.path.join(self.dir.name, "v1.sstrace")
        with open(v1, "wb") as f:
            f.write(example_bytes("example-v1-hex"))
        old = tr.read_trace(v1)
        self.assertEqual([(e.kind, e.rank, e.t_ns, e.bytes, e.step, e.text) for e in old.events],
                         [(e.kind, e.rank, e.t_ns, e.bytes, e.step, e.text) for e in trace.events])

    def test_cut_file_reads_up_to_the_last_whole_record(self):
        data = self.write_example()
        with open(self.path, "wb") as f:
            f.write(data[:500])
        trace = tr.read_trace(self.path)
        self.assertFalse(trace.complete)
        self.assertEqual(len(trace.events), 2)
        self.assertEqual(trace.valid_bytes, 492)


class RoundTrip(unittest.TestCase):
    def test_random_events_round_trip(self):
        rng = random.Random(7)
        events = []
        t = {r: 0 for r in (-1, 0, 1, 2)}
        texts = ["forward", "before_step", "fc0.weight", "", "ünïcode"]
        for _ in range(10000):
            rank = rng.choice((-1, 0, 1, 2))
            t[rank] += rng.randrange(0, 5000)
            e = dict(kind=rng.randrange(8), rank=rank, t_ns=t[rank], step=rng.randrange(3), op=rng.choice((-1, 5, 9)),
                     stream=rng.randrange(3), category=rng.randrange(len(tw.CATEGORIES)), bytes=rng.choice((0, 4, 1 << 40, -8)),
                     allocated_after=rng.randrange(0, 1 << 50), reserved_after=rng.randrange(0, 1 << 50),
                     tensor=rng.choice((-1, 0, 12345)), text=rng.choice(texts))
            events.append(e)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.sstrace")
            w = tw.TraceWriter(path, example_header(), flush_interval_s=0)
            for e in events:
                w.event(**e)
            w.close()
            trace = tr.read_trace(path)
        self.assertTrue(trace.complete)
        self.assertEqual(len(trace.events), len(events))
        for got, want in zip(trace.events, events):
            for key, value in want.items():
                self.assertEqual(getattr(got, key), value, key)

    def test_timer_flushes_whole_records_while_the_writer_waits(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.sstrace")
            w = tw.TraceWriter(path, example_header(), flush_interval_s=0.02)
            w.event(tw.ALLOC, 0, 10, bytes=4, allocated_after=4)
            import time
            deadline = time.time() + 5
            while time.time() < deadline and len(tr.read_trace(path).events) < 1:
                time.sleep(0.01)
            trace = tr.read_trace(path)  # no End record yet: what a killed writer leaves
            self.assertEqual(len(trace.events), 1)
            self.assertFalse(trace.complete)
            w.close()
            self.assertTrue(tr.read_trace(path).complete)


class CppReader(unittest.TestCase):
    def test_cli_checks_and_reads_the_example(self):
        helpers.require_cli(self)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "e.sstrace")
            w = tw.TraceWriter(path, example_header(), flush_interval_s=0)
            w.event(tw.ALLOC, 0, 1000, category=tw.PARAMETERS, bytes=4096, allocated_after=4096, reserved_after=4096)
            w.event(tw.PHASE, 1, 1500, step=1, text="forward")
            w.event(tw.RUN_END, -1, 2500, text="ok")
            w.close()
            self.assertEqual(helpers.run_cli("trace", "check", path).returncode, 0)
            info = helpers.cli_json("trace", "info", path, "--json")
            self.assertEqual((info["events"], info["ranks"], info["duration_ns"], info["complete"]), (3, 2, 1500, True))


if __name__ == "__main__":
    unittest.main()
