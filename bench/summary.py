#!/usr/bin/env python3
"""Prints tend's cells from a harness results JSON next to the baselines measured in the
same session (median seconds, ratio to baseline-c and baseline-py, peak RSS), as the
Markdown table quoted in BENCHMARKS.md.  Usage: summary.py results.json"""
import json
import sys


def main(path):
    cells = json.load(open(path))["cells"]
    by = {(c["tool"], c["scenario"], c["n"]): c for c in cells}
    keys = sorted({(c["scenario"], c["n"]) for c in cells if c["tool"] == "tend"})
    print("| scenario | N | tend median s | min | max | baseline-c s | baseline-py s | tend / C | tend / py | tend peak RSS MiB | probe s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for scen, n in keys:
        t = by[("tend", scen, n)]
        c = by.get(("baseline-c", scen, n), {})
        p = by.get(("baseline-py", scen, n), {})
        if t.get("status") != "ok":
            print(f"| {scen} | {n} | {t.get('status')} | | | | | | | | |")
            continue
        def f(x):
            return "" if x is None else f"{x:.3f}"
        def ratio(a, b):
            return "" if not a or not b else f"{a / b:.1f}x"
        rss = t.get("rss_time_v_kb")
        print(f"| {scen} | {n} | {f(t['median'])} | {f(t.get('min'))} | {f(t.get('max'))} | {f(c.get('median'))} | "
              f"{f(p.get('median'))} | {ratio(t['median'], c.get('median'))} | {ratio(t['median'], p.get('median'))} | "
              f"{'' if rss is None else round(rss / 1024)} | {f(t.get('probe_s'))} |")
        for note in t.get("notes", []):
            print(f"|  | | note: {note} | | | | | | | | |")


if __name__ == "__main__":
    main(sys.argv[1])
