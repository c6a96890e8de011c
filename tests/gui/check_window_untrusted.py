#!/usr/bin/env python3
"""The window against untrusted runs (issue 41), end to end under Xvfb:
- a trace whose header and events carry 20,000-byte texts with terminal escape sequences (source, accounting rules,
  command line, device name, an op label, a tensor name and a phase name): the window draws it (ImGui asserted on the
  phase label, 4 vertices a byte past its 16-bit index: exit 134 before) and exits 0;
- `--connect` to a hostile server that refuses with 4 KB of escape sequences: exit 2, the refusal on stderr with its
  control characters escaped and its length cut;
- `--connect` to a hostile server that proves the token, then announces a 2^32 - 1-byte trace header and keeps
  sending: the window stops reading, exits 2 and holds no more than a few hundred MiB.
Exit 0 pass, 1 fail, 77 skipped (no Xvfb).
Usage: check_window_untrusted.py SHARDSCOPE PYTHON_DIR OUT_DIR"""
import hashlib
import hmac
import os
import resource
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xvfb_display import start_xvfb  # noqa: E402

GUI, PYTHON_DIR, OUT = sys.argv[1:4]
sys.path.insert(0, PYTHON_DIR)
from shardscope import trace_writer as tw  # noqa: E402

os.makedirs(OUT, exist_ok=True)
EVIL = "\x1b[2J\x1b]0;pwned\x07"
TOKEN = "untrusted-window-test-token"


def write_untrusted_trace(path):
    header = tw.make_header(source="pytorch 2.11 " + EVIL + "S" * 20000, scenario_json="",
                            accounting_rules="exact " + EVIL + "R" * 20000,
                            devices=[{"rank": 0, "name": EVIL + "D" * 20000, "capacity": 1 << 30}],
                            command_line="train.py " + EVIL + "C" * 20000)
    writer = tw.TraceWriter(path, header)
    events = [(tw.PHASE, {"text": "model_created"}),
              (tw.OP_BEGIN, {"text": EVIL + "O" * 20000}),
              (tw.ALLOC, {"category": tw.PARAMETERS, "bytes": 1 << 20, "allocated_after": 1 << 20, "tensor": 0,
                          "text": EVIL + "T" * 20000}),
              (tw.PHASE, {"text": EVIL + "P" * 20000}),
              (tw.OP_END, {}),
              (tw.ALLOC, {"category": tw.ACTIVATIONS, "bytes": 1 << 19, "allocated_after": 3 << 19, "tensor": 1}),
              (tw.PHASE, {"step": 1, "text": "forward"}),
              (tw.FREE, {"category": tw.ACTIVATIONS, "bytes": 1 << 19, "allocated_after": 1 << 20, "tensor": 1}),
              (tw.PHASE, {"step": 1, "text": "after_step"})]
    for i, (kind, fields) in enumerate(events):
        writer.event(kind, 0, 1000 * (i + 1), **fields)
    writer.close()


def frame(kind, payload):
    body = b"SSTS" + bytes([1, kind]) + payload
    return struct.pack(">I", len(body)) + body


def read_frame(conn):
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError("viewer closed")
            data += chunk
        return data
    (length,) = struct.unpack(">I", exactly(4))
    return exactly(length)


class HostileServer(threading.Thread):
    """Serves every viewer that connects the same hostile way until stopped; counts what it sent."""

    def __init__(self, behaviour):
        super().__init__(daemon=True)
        self.behaviour = behaviour
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.stop = False
        self.connections = 0
        self.sent_after_accept = 0

    def run(self):
        while not self.stop:
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            self.connections += 1
            with conn:
                try:
                    self.behaviour(self, conn)
                except OSError:
                    pass  # the viewer hung up: what it should do
        self.listener.close()


def refuse(server, conn):
    conn.sendall(frame(1, bytes(range(32))))
    read_frame(conn)
    conn.sendall(frame(4, (EVIL + "refused! " + "A" * 4000).encode()[:4090]))


def accept_then_huge_header(server, conn):
    nonce_s = bytes(range(32))
    conn.sendall(frame(1, nonce_s))
    subscribe = read_frame(conn)
    nonce_v = subscribe[6:38]
    stream_id = bytes(16)
    mac = hmac.new(TOKEN.encode(), b"shardscope-stream-accept" + nonce_s + nonce_v + stream_id, hashlib.sha256).digest()
    conn.sendall(frame(3, stream_id + mac))
    # The preamble, then a Header record (type 1) whose varint length is 2^32 - 1, then bytes without end.
    conn.sendall(tw.MAGIC + (2).to_bytes(4, "little") + bytes(4) + bytes([1, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]))
    conn.settimeout(5)
    block = bytes(1 << 20)
    while not server.stop and server.sent_after_accept < (6 << 30):
        conn.sendall(block)
        server.sent_after_accept += len(block)


def run_window(display, *args, timeout=120):
    started = time.monotonic()
    done = subprocess.run([GUI, *args], env=dict(os.environ, DISPLAY=display), capture_output=True, timeout=timeout)
    return done, time.monotonic() - started


def main():
    xvfb, display = start_xvfb()
    failures = []
    try:
        trace = os.path.join(OUT, "untrusted.sstrace")
        write_untrusted_trace(trace)
        done, _ = run_window(display, "--trace", trace, "--screenshot", os.path.join(OUT, "untrusted.png"))
        if done.returncode != 0 or not os.path.exists(os.path.join(OUT, "untrusted.png")):
            failures.append(f"untrusted trace: exit {done.returncode}: {done.stderr[-2000:]!r}")
        else:
            print("ok: a trace of 20,000-byte texts with escape sequences is drawn (exit 0)")

        server = HostileServer(refuse)
        server.start()
        done, seconds = run_window(display, "--connect", f"127.0.0.1:{server.port}", "--token", TOKEN,
                                   "--screenshot", os.path.join(OUT, "refused.png"), "--screenshot-timeout", "60")
        server.stop = True
        err = done.stderr
        if done.returncode != 2 or b"refused" not in err or b"\x1b" in err or b"\x07" in err or len(err) > 3000:
            failures.append(f"hostile refusal: exit {done.returncode}, {len(err)} bytes of stderr: {err[:300]!r}")
        else:
            print(f"ok: a hostile refusal: exit 2 in {seconds:.1f} s, {len(err)} bytes on stderr, escapes escaped:",
                  err.decode(errors="replace")[:160].strip(), "…")

        server = HostileServer(accept_then_huge_header)
        server.start()
        done, seconds = run_window(display, "--connect", f"127.0.0.1:{server.port}", "--token", TOKEN,
                                   "--screenshot", os.path.join(OUT, "huge.png"), "--screenshot-timeout", "60")
        server.stop = True
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if done.returncode != 2 or peak_mib > 600:
            failures.append(f"2^32 - 1-byte header: exit {done.returncode} after {seconds:.1f} s, peak {peak_mib:.0f} MiB,"
                            f" {server.sent_after_accept} bytes sent: {done.stderr[-1000:]!r}")
        else:
            print(f"ok: a server announcing a 2^32 - 1-byte header: exit 2 in {seconds:.1f} s, peak RSS {peak_mib:.0f} MiB,"
                  f" {server.sent_after_accept >> 20} MiB sent after ACCEPT over {server.connections} connection(s):",
                  done.stderr.decode(errors="replace").strip()[:200])
    finally:
        xvfb.terminate()
        xvfb.wait()
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
