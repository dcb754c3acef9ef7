#!/usr/bin/env python3
"""Deploy latency: three `tend run --seeds` agents following deploys, one real etcd on loopback.

Each trial writes a program whose files/data.txt holds a new tag, runs `tend deploy` on it,
and times from the start of that command until all three agents' output files hold the tag:
the deploy's own compile (type check), its upload (blobs and the record in one
transaction), each agent's watch of `latest`, its fetch, its compile with its own host name,
its new dataflow running beside the old one until its first output, and the graph swap.

Usage: deploy.py TEND_BINARY [TRIALS]
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import pct, read, setup, stop_all, wait  # noqa: E402

PROGRAM = '''import "deploy"
file "%s/${hostname}" {
	state => "exists",
	content => deploy.readfile("/files/data.txt"),
}
'''


def main():
    tend, trials, work, etcd, cluster = setup("deploy", 50)
    procs = []
    try:
        out = os.path.join(work, "out")
        os.makedirs(out)
        hosts = ["h1", "h2", "h3"]
        for h in hosts:
            procs.append(subprocess.Popen(
                [tend, "--hostname", h, "run", "--prefix", os.path.join(work, h)] + cluster.flags,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        src = os.path.join(work, "src")
        os.makedirs(os.path.join(src, "files"))
        with open(os.path.join(src, "main.mcl"), "w") as f:
            f.write(PROGRAM % out)
        times = []
        for i in range(0, trials + 1):
            tag = "deploy-%d" % i
            with open(os.path.join(src, "files", "data.txt"), "w") as f:
                f.write(tag)
            start = time.perf_counter()
            subprocess.run([tend, "deploy", src] + cluster.flags, check=True, stdout=subprocess.DEVNULL)
            wait(lambda: all(read(os.path.join(out, h)) == tag for h in hosts), 30, "deploy %d" % i)
            if i > 0:  # the first one also starts the agents' programs from nothing
                times.append((time.perf_counter() - start) * 1000)
        times.sort()
        print("deploy to 3 agents applied, trials=%d p50=%.1f ms p90=%.1f ms p99=%.1f ms max=%.1f ms"
              % (trials, pct(times, 50), pct(times, 90), pct(times, 99), times[-1]))
    finally:
        stop_all(procs, etcd, work)


if __name__ == "__main__":
    main()
