#!/usr/bin/env python3
"""Per-phase time and memory of `tend run` on the peer kit's file program, at several sizes.

For each N, writes the kit's program (one directory plus N-1 files) to a scratch directory and
runs TEND as a daemon on it, cold. The phases are read from the daemon's own JSON log lines
(`TEND_LOG` keeps tend's debug lines and the engine's info lines, not the per-resource ones):

  compile      process start -> "watching the program's sources" (read, parse, interpolate,
               scope, unify, function graph)
  dataflow     -> "output settled; interpreting"
  interpret    -> "interpreted; building resources"
  build        -> "built; swapping" (the resources' params decoded and checked)
  swap         -> "graph swapped" (the engine starts every worker and watch)
  converge     -> the first "converger" line with converged=true
  idle         3 s of watching after the converge: the daemon's resident memory then
  shutdown     SIGTERM -> exit

The scratch directory is on /dev/shm when writable (as in the peer kit), keeping disk syncs out.
VmRSS is sampled every 2 ms; each phase gets the largest sample taken during it.

Usage: phases.py TEND_BINARY [N ...]      (default N: 1000 10000 100000)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heap  # noqa: E402  (the kit's program, shared with heap.py)

MARKS = [
    ("compile", lambda f: f.get("message") == "watching the program's sources"),
    ("dataflow", lambda f: f.get("message") == "output settled; interpreting"),
    ("interpret", lambda f: f.get("message") == "interpreted; building resources"),
    ("build", lambda f: f.get("message") == "built; swapping"),
    ("swap", lambda f: f.get("message") == "graph swapped"),
    ("converge", lambda f: f.get("message") == "converger" and f.get("converged") is True),
]
IDLE = 3.0


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def scratch_root():
    """tmpfs when there is one, as the peer kit does: the disk's fsyncs stay out of the figures."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def measure(tend, n):
    scratch = tempfile.mkdtemp(prefix="tend-phases-", dir=scratch_root())
    try:
        prog = os.path.join(scratch, "main.mcl")
        with open(prog, "w") as f:
            f.write(heap.program(os.path.join(scratch, "root"), n))
        env = dict(os.environ, TEND_LOG="tend=debug,engine=info,engine::worker=warn")
        start = time.time()
        proc = subprocess.Popen([tend, "run", "-q", "--log-format", "json", "--prefix", os.path.join(scratch, "state"),
                                 prog], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        samples, done = [], threading.Event()

        def sample():
            while not done.is_set():
                kib = rss_kib(proc.pid)
                if kib is not None:
                    samples.append((time.time(), kib))
                time.sleep(0.002)

        threading.Thread(target=sample, daemon=True).start()
        marks, todo = {}, list(MARKS)
        for line in proc.stderr:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if todo and todo[0][1](rec.get("fields", {})):
                stamp = datetime.strptime(rec["timestamp"][:26].rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
                marks[todo[0][0]] = (stamp - datetime(1970, 1, 1)).total_seconds()
                todo.pop(0)
                if not todo:
                    break
        time.sleep(IDLE)
        marks["idle"] = time.time()
        proc.send_signal(signal.SIGTERM)
        threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
        proc.wait()
        marks["shutdown"] = time.time()
        done.set()
        rows, begin = [], start
        for name, _ in MARKS + [("idle", None), ("shutdown", None)]:
            end = marks.get(name)
            if end is None:
                rows.append((name, None, None))
                continue
            # A phase shorter than the sampling period: the last sample taken before its end.
            peak = max((k for t, k in samples if begin <= t <= end), default=None)
            if peak is None:
                peak = next((k for t, k in reversed(samples) if t <= end), None)
            rows.append((name, end - begin, peak))
            begin = end
        idle = [k for t, k in samples if marks["idle"] - 1.0 <= t <= marks["idle"]]
        return rows, (max(idle) if idle else None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    tend = os.path.abspath(sys.argv[1])
    sizes = [int(a) for a in sys.argv[2:]] or [1000, 10000, 100000]
    results = {n: measure(tend, n) for n in sizes}
    print("| phase | " + " | ".join("%d: time, peak RSS" % n for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for i, (name, _, _) in enumerate(results[sizes[0]][0]):
        cells = []
        for n in sizes:
            _, secs, kib = results[n][0][i]
            cells.append("—" if secs is None else "%.3f s, %.1f MiB" % (secs, (kib or 0) / 1024))
        print("| %s | %s |" % (name, " | ".join(cells)))
    print("| idle daemon, resident | " + " | ".join("%.1f MiB" % ((results[n][1] or 0) / 1024) for n in sizes) + " |")


if __name__ == "__main__":
    main()
