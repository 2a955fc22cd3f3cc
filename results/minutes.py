#!/usr/bin/env python3
"""Minute-by-minute markdown table of a replica-stress *.ops.csv file.

    python3 results/minutes.py results/2026-12-02/mixed-ics/ics.ops.csv

Per minute of the run: mean op rate, the median and the worst of the
per-second p99s (of every operation, and of the reads and the writes
alone where the run was mixed), the sstable count at the minute's end and
its maximum within the minute, and errors. A tail of under 10 seconds
after the last whole minute (the clients stopping) is left out.
"""
import csv
import statistics as st
import sys


def number(v):
    return float(v) if v not in ("", None) else None


def minutes(path):
    rows = list(csv.DictReader(open(path)))
    by_minute = {}
    for r in rows:
        m = int(float(r["time_s"]) - 1e-9) // 60
        by_minute.setdefault(m, []).append(r)
    return by_minute


def spread(rows, column):
    vals = [number(r.get(column)) for r in rows]
    vals = [v for v in vals if v is not None and v > 0]
    if not vals:
        return "-", "-"
    return f"{st.median(vals):.0f}", f"{max(vals):.0f}"


def main():
    for path in sys.argv[1:]:
        print(f"\n{path}\n")
        mixed = "read_p99_ms" in open(path).readline()
        head = "| minute | op/s | p99 ms (median, worst second) |"
        rule = "|--:|--:|--:|"
        if mixed:
            head += " read p99 ms (median, worst) | write p99 ms (median, worst) |"
            rule += "--:|--:|"
        head += " sstables (end, max) | errors |"
        rule += "--:|--:|"
        print(head)
        print(rule)
        for m, rows in sorted(minutes(path).items()):
            if len(rows) < 10 and m > 0:
                # The run's tail after its last whole minute (clients
                # stopping): not a minute of load.
                continue
            ops = st.mean(float(r["op_rate"]) for r in rows)
            cells = [f"{m + 1}", f"{ops:,.0f}", "%s, %s" % spread(rows, "p99_ms")]
            if mixed:
                cells.append("%s, %s" % spread(rows, "read_p99_ms"))
                cells.append("%s, %s" % spread(rows, "write_p99_ms"))
            sst = [int(r["sstables"]) for r in rows]
            cells.append(f"{sst[-1]}, {max(sst)}")
            cells.append(str(sum(int(r["errors"]) for r in rows)))
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
