#!/usr/bin/env bash
# Fixed start-up cost of a command (issue 22: < 10 ms and < 20 MiB unless --backend cuda): runs it RUNS times
# (default 20) under /usr/bin/time and prints the median and worst wall time, the median CPU time (user + sys: the
# figure to trust on a loaded machine) and the largest max RSS; then the same for /bin/true, the floor of starting
# any program this way. The child is forked from /usr/bin/time, whose own small RSS is what max RSS cannot go
# below; wall time is taken around it in ms (time's own %e rounds to 10 ms). Not a test: figures depend on the machine.
# Usage: tests/bench/bench_startup.sh [CLI] [ARGS...]     (default: build/app/shardscope-cli --version)
# Example: RUNS=50 tests/bench/bench_startup.sh build-cuda/app/shardscope-cli --version
set -eu
cli=${1:-build/app/shardscope-cli}
shift || true
[ $# -gt 0 ] || set -- --version
exec python3 - "${RUNS:-20}" "$cli" "$@" <<'PY'
import statistics, subprocess, sys, tempfile, time
runs, command = int(sys.argv[1]), sys.argv[2:]

def measure(command):
    walls, cpus, rss_kib = [], [], []
    with tempfile.NamedTemporaryFile("r") as report:
        for _ in range(runs):
            start = time.perf_counter()
            done = subprocess.run(["/usr/bin/time", "-o", report.name, "-f", "%M %U %S", *command],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            walls.append((time.perf_counter() - start) * 1e3)
            if done.returncode != 0:
                sys.exit(f"{' '.join(command)} exited {done.returncode}")
            report.seek(0)
            rss, user, system = report.read().split()[-3:]
            rss_kib.append(int(rss))
            cpus.append((float(user) + float(system)) * 1e3)
    print(f"{' '.join(command)}: {runs} runs, wall median {statistics.median(walls):.1f} ms, worst "
          f"{max(walls):.1f} ms; CPU (user + sys) median {statistics.median(cpus):.0f} ms; max RSS "
          f"{max(rss_kib) / 1024:.1f} MiB")

measure(command)
measure(["/bin/true"])
PY
