#!/usr/bin/env python3
"""One markdown row per run of replica-stress results directories.

    python3 results/table.py results/2026-12-02/issue22-*

Reads each directory's summary.json (a single run, or both sides of a
--compare) and prints op rate, latency, flushes, compaction, write
amplification, the longest pause and write phase, and each device's
utilisation and wait.
"""
import json
import os
import sys

MIB = 1 << 20


def runs(path):
    d = json.load(open(os.path.join(path, "summary.json")))
    if "baseline" in d:
        return [d["baseline"], d["candidate"]]
    return [d]


def row(name, r):
    l = r["latency_ms"]
    c = r["compaction"]
    dm = r["dirty_memory"]
    wp = r.get("write_phases", {})
    devs = "; ".join(
        f"{x['name']} {x['utilisation'] * 100:.0f}% busy, waited {x['waited_s']:.0f} s"
        for x in r.get("devices", [])
    )
    return (
        f"| {name} | {r['label']} | {r['op_rate']:,.0f} | {l['p95']:,.0f} | {l['p99_9']:,.0f} | "
        f"{l['max']:,.0f} | {r['total_operation_time_s']:.0f} | {r['total_errors']} | "
        f"{dm['flushes']} ({dm['mean_flush_bytes'] / MIB:.1f} MiB) | "
        f"{c['jobs']} jobs, {c['bytes_compacted'] / MIB / 1024:.1f} GiB | "
        f"{c['write_amplification']:.2f} | {c['sstables']} | {r['longest_pause_ms']:,.0f} | "
        f"{wp.get('log_append', {}).get('max_ms', 0):,.0f} / "
        f"{wp.get('admission', {}).get('max_ms', 0):,.0f} / "
        f"{wp.get('memtable_apply', {}).get('max_ms', 0):,.0f} | "
        f"{dm['writers_blocked_s']:,.0f} | {devs} |"
    )


print(
    "| run | policy | op/s | p95 ms | p99.9 ms | max ms | elapsed s | errors | flushes (mean) "
    "| compaction | WA | sstables at end | longest pause ms | longest log / dirty wait / apply ms "
    "| writers blocked s | devices |"
)
print("|---|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|---|--:|---|")
for p in sys.argv[1:]:
    for r in runs(p):
        print(row(os.path.basename(p.rstrip("/")), r))
