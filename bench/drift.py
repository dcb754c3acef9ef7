#!/usr/bin/env python3
"""Drift repair latency of a running `tend run`: converge N files (the peer kit's file
scenario), then damage one file at a time (delete, or append to it) and time until tend has
restored it, polling every 0.2 ms.  Usage: drift.py TEND_BINARY [N] [TRIALS]"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import wait  # noqa: E402


def main():
    tend = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    trials = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    work = tempfile.mkdtemp(prefix="tend-drift-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    root = os.path.join(work, "root")
    want = {os.path.join(root, "f%05d" % i): "bench file %05d of %d\n" % (i, n) for i in range(n)}
    prog = ['file "%s/" {\n\tstate => "exists",\n\tmode => "0755",\n}' % root]
    for p, c in want.items():
        prog.append('file "%s" {\n\tstate => "exists",\n\tcontent => "%s",\n\tmode => "0644",\n}'
                    % (p, c.replace("\n", "\\n")))
    with open(os.path.join(work, "main.mcl"), "w") as f:
        f.write("\n".join(prog) + "\n")
    proc = subprocess.Popen([tend, "run", "--no-watch", "--prefix", os.path.join(work, "state"),
                             os.path.join(work, "main.mcl")], stderr=subprocess.DEVNULL)
    try:
        def ok(p):
            try:
                with open(p) as f:
                    return f.read() == want[p]
            except OSError:
                return False
        wait(lambda: all(ok(p) for p in want), 120, "tend to converge", poll=0.05)
        time.sleep(1.0)
        paths = sorted(want)
        lat = []
        for t in range(trials):
            p = paths[(t * 7919) % n]
            start = time.monotonic()
            if t % 2 == 0:
                os.unlink(p)
            else:
                with open(p, "a") as f:
                    f.write("drift\n")
            wait(lambda: ok(p), 10, "%s to be repaired" % p)
            lat.append(time.monotonic() - start)
            time.sleep(0.02)
        lat.sort()
        q = lambda x: lat[min(len(lat) - 1, int(x * len(lat)))] * 1000
        print("drift repair, N=%d, %d trials (half deletes, half appends): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms"
              % (n, trials, q(0.5), q(0.9), q(0.99), lat[-1] * 1000))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
