#!/usr/bin/env python3
"""Where a cold converge's heap goes at its peak, by phase: heaptrack on `tend run`.

Writes the peer kit's file program (one directory plus N-1 files) to a scratch directory,
runs TEND (built with the system allocator and line tables, which heaptrack needs:
`cargo build --profile profiling --features system-alloc`) under heaptrack with
`--converged-timeout 0`, and attributes every byte live at the heap's peak to the innermost
frame of the stack that names a phase (the table below), then lists the tend functions that
hold most. Needs heaptrack and heaptrack_print (Debian's `heaptrack`).

Usage: heap.py TEND_BINARY [N]
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (a substring of a stack frame, the phase it belongs to), innermost match wins.
PHASES = [
    ("lang::pipeline", "compile (AST, function graph, types)"),
    ("lang::syntax", "compile (AST, function graph, types)"),
    ("lang::scope", "compile (AST, function graph, types)"),
    ("lang::unify", "compile (AST, function graph, types)"),
    ("funcs::runtime", "dataflow and its output"),
    ("lang::interpret", "interpretation (resource graph)"),
    ("resources::graph::to_engine", "building resources"),
    ("resources::common::Raw", "resources: raw param maps"),
    ("resources::util::watch", "watch hub"),
    ("resources::", "resources: other"),
    ("engine::swap", "engine: swap and links"),
    ("engine::worker", "engine: workers and watches"),
    ("Engine::apply", "engine: tasks and nodes"),
    ("engine::", "engine: other"),
    ("tend::", "binary: other"),
]


def program(root, n):
    out = ['file "%s/" {\n\tstate => "exists",\n\tmode => "0755",\n}' % root]
    for i in range(n - 1):
        out.append('file "%s/f%05d" {\n\tstate => "exists",\n\tcontent => "bench file %05d of %d\\n",\n\tmode => "0644",\n}'
                   % (root, i, i, n))
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    tend, n = os.path.abspath(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    # tmpfs when there is one, as the peer kit does (the disk's fsyncs stay out).
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    scratch = tempfile.mkdtemp(prefix="tend-heap-", dir=shm)
    try:
        root = os.path.join(scratch, "root")
        with open(os.path.join(scratch, "main.mcl"), "w") as f:
            f.write(program(root, n))
        out = os.path.join(scratch, "heap")
        subprocess.run(["heaptrack", "-o", out, tend, "run", "--converged-timeout", "0", "-q",
                        "--prefix", os.path.join(scratch, "state"), os.path.join(scratch, "main.mcl")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        data = out + ".zst" if os.path.exists(out + ".zst") else out + ".gz"
        summary = subprocess.run(["heaptrack_print", "-f", data], capture_output=True, text=True).stdout
        flame = os.path.join(scratch, "peak.txt")
        subprocess.run(["heaptrack_print", "-f", data, "--print-flamegraph", flame, "--flamegraph-cost-type", "peak"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        phases, functions = collections.Counter(), collections.Counter()
        with open(flame) as f:
            for line in f:
                stack, _, cost = line.rstrip("\n").rpartition(" ")
                frames = stack.split(";")
                cost = int(cost)
                phase = next((name for frame in reversed(frames) for key, name in PHASES if key in frame), "other")
                phases[phase] += cost
                ours = [re.sub(r"::h[0-9a-f]{16}", "", fr) for fr in frames
                        if re.search(r"\b(lang|funcs|engine|resources|tend)::", fr)]
                functions[ours[-1].split(" (")[0] if ours else "other"] += cost
        total = sum(phases.values())
        peak = re.search(r"peak heap memory consumption: (\S+)", summary)
        rss = re.search(r"peak RSS \(including heaptrack overhead\): (\S+)", summary)
        print("tend run, %d file resources: heap at its peak %s, peak RSS with heaptrack %s"
              % (n, peak.group(1) if peak else "?", rss.group(1) if rss else "?"))
        print("\n| phase holding the bytes at the peak | MB | bytes per resource |\n|---|---:|---:|")
        for name, cost in phases.most_common():
            print("| %s | %.1f | %d |" % (name, cost / 1e6, cost / n))
        print("| total | %.1f | %d |" % (total / 1e6, total / n))
        print("\nfunctions holding most:")
        for name, cost in functions.most_common(12):
            print("  %8.1f MB  %s" % (cost / 1e6, name))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
