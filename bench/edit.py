#!/usr/bin/env python3
"""Save-to-apply latency and idle memory of a live `tend run` daemon.

Converges a program of N file resources (the peer kit's file scenario, one directory plus
N-1 files), then, TRIALS times, saves an edit of main.mcl that changes the content of one
file and times from the save (the write's return) until that file holds the new content,
polling every 0.2 ms. Between trials it waits for the daemon to go idle. Before the first
edit it samples the idle daemon's resident memory (VmRSS) with all N resources watched.

Usage: edit.py TEND_BINARY [N] [TRIALS]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import read, rss_kib, wait  # noqa: E402


def program(root, n, version, changed):
    out = ['file "%s/" {\n\tstate => "exists",\n\tmode => "0755",\n}' % root]
    for i in range(n - 1):
        tag = version if i == changed else 0
        out.append('file "%s/f%05d" {\n\tstate => "exists",\n\tcontent => "file %05d edit %d\\n",\n\tmode => "0644",\n}'
                   % (root, i, i, tag))
    return "\n".join(out) + "\n"


def main():
    tend = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    trials = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    work = tempfile.mkdtemp(prefix="tend-edit-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    root = os.path.join(work, "root")
    main_mcl = os.path.join(work, "main.mcl")
    with open(main_mcl, "w") as f:
        f.write(program(root, n, 0, -1))
    proc = subprocess.Popen([tend, "run", "--prefix", os.path.join(work, "state"), main_mcl],
                            stderr=subprocess.DEVNULL)


    try:
        last = os.path.join(root, "f%05d" % (n - 2))
        wait(lambda: read(last) == "file %05d edit 0\n" % (n - 2), 120, "tend to converge", poll=0.05)
        time.sleep(2.0)
        idle_rss = rss_kib(proc.pid)
        lat = []
        for t in range(1, trials + 1):
            changed = (t * 7919) % (n - 1)
            target = os.path.join(root, "f%05d" % changed)
            want = "file %05d edit %d\n" % (changed, t)
            text = program(root, n, t, changed)
            start = time.monotonic()
            with open(main_mcl, "w") as f:
                f.write(text)
            wait(lambda: read(target) == want, 20, "the edit of %s to be applied" % target)
            lat.append(time.monotonic() - start)
            time.sleep(0.3)
        lat.sort()
        q = lambda x: lat[min(len(lat) - 1, int(x * len(lat)))] * 1000
        print("save-to-apply, N=%d, %d edits: p50 %.1f ms, p90 %.1f ms, max %.1f ms; idle RSS with %d resources watched: %.1f MiB"
              % (n, trials, q(0.5), q(0.9), lat[-1] * 1000, n, idle_rss / 1024))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
