#!/usr/bin/env python3
"""Writes `link/symbol-order.txt`: the functions of the shipped binary that a run executes,
hottest first, which `build.rs` hands to the linker so they sit together at the front of
the text (see build.rs for why that lowers every run's resident size).

Runs TEND (a `cargo build --profile dist` binary: the list names its symbols, which other
profiles do not share) under callgrind on: `examples/hello`, then the peer kit's file
program at N files cold and again idempotent. Every function of the binary with an
instruction counted in any of them is listed, by instructions run (all runs added), then
by name. Needs valgrind.

  --check  writes nothing; says how much of what the runs executed the current list holds
           (run it on a binary built with the list: a low share means it is stale).

Usage: symbol_order.py TEND_DIST_BINARY [--n N] [--check]
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heap  # noqa: E402  (the kit's program)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = os.path.join(REPO, "link", "symbol-order.txt")


def text_symbols(binary):
    """Names of the binary's functions (`nm`: t/T/w/W)."""
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    return {p[2] for p in (line.split() for line in out.splitlines()) if len(p) == 3 and p[1] in "tTwW"}


def self_costs(path, binary, costs):
    """Adds each function's own instruction count from one callgrind output (names
    unmangled off, positions compressed as callgrind writes them) to `costs`."""
    names, objects = {}, {}
    obj = fn = None
    skip_next = False  # the cost line after `calls=` is the call's, not the caller's own
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            called, kind, ident, name = m.groups()
            table = objects if kind == "ob" else names
            if name is not None:
                table[ident] = name
            if not called:
                if kind == "ob":
                    obj = table.get(ident)
                else:
                    fn = table.get(ident)
            continue
        if line.startswith("calls="):
            skip_next = True
            continue
        if line[:1] in "+-*0123456789" and fn is not None:
            if skip_next:
                skip_next = False
                continue
            parts = line.split()
            if len(parts) >= 2 and obj is not None and os.path.realpath(obj) == binary:
                costs[fn] += int(parts[1])


def main():
    args = sys.argv[1:]
    check = "--check" in args
    n = int(args[args.index("--n") + 1]) if "--n" in args else 2000
    positional = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] != "--n")]
    if len(positional) != 1 or shutil.which("valgrind") is None:
        sys.exit(__doc__)
    binary = os.path.realpath(positional[0])
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    scratch = tempfile.mkdtemp(prefix="tend-order-", dir=shm)
    try:
        root = os.path.join(scratch, "root")
        program = os.path.join(scratch, "main.mcl")
        with open(program, "w") as f:
            f.write(heap.program(root, n))
        state = os.path.join(scratch, "state")
        runs = [
            ("hello", os.path.join(REPO, "examples", "hello")),
            ("cold", program),
            ("idempotent", program),
        ]
        costs = collections.Counter()
        for label, target in runs:
            out = os.path.join(scratch, "callgrind." + label)
            subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", "--callgrind-out-file=" + out,
                            binary, "run", "--converged-timeout", "0", "-q", "--prefix", state, target],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self_costs(out, binary, costs)
        functions = text_symbols(binary)
        ran = sorted((name for name in costs if name in functions), key=lambda s: (-costs[s], s))
        if check:
            listed = set(open(ORDER).read().split()) if os.path.exists(ORDER) else set()
            held = sum(1 for s in ran if s in listed)
            print("%d of the %d functions the runs executed are in %s (%.0f%%)"
                  % (held, len(ran), os.path.relpath(ORDER), 100.0 * held / max(1, len(ran))))
            return
        os.makedirs(os.path.dirname(ORDER), exist_ok=True)
        with open(ORDER, "w") as f:
            f.write("\n".join(ran) + "\n")
        print("wrote %s: %d functions" % (os.path.relpath(ORDER), len(ran)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
