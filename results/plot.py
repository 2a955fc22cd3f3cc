#!/usr/bin/env python3
"""Summarise and plot replica-stress --results-dir directories.

For each DIR given, reads every <policy>.ops.csv in it and prints the
per-second op-rate spread (min, median, max, coefficient of variation),
the p99 spread, and each modelled device's mean busy share. With
matplotlib installed, also writes DIR/plot.png: op rate, p99 latency and
device busy share over time, one line per run.
"""

import csv
import statistics
import sys
from pathlib import Path


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    # The last row is a short tail after the clients stopped.
    return rows[:-1] if len(rows) > 1 else rows


def column(rows, name):
    return [float(r[name]) for r in rows]


def devices(rows):
    if not rows:
        return []
    return [k[: -len("_busy")] for k in rows[0] if k.endswith("_busy")]


def summarise(label, rows):
    rate = column(rows, "op_rate")
    p99 = column(rows, "p99_ms")
    mean = statistics.mean(rate) if rate else 0.0
    cv = statistics.pstdev(rate) / mean if mean else 0.0
    print(
        f"{label}: {len(rows)} s, op rate min {min(rate):.0f} / median "
        f"{statistics.median(rate):.0f} / max {max(rate):.0f} op/s (CV {cv:.2f}), "
        f"p99 median {statistics.median(p99):.1f} / max {max(p99):.1f} ms, "
        f"errors {sum(column(rows, 'errors')):.0f}"
    )
    for d in devices(rows):
        busy = column(rows, f"{d}_busy")
        waited = column(rows, f"{d}_waited_s")
        print(
            f"  device {d}: busy {statistics.mean(busy) * 100:.1f}% on average, "
            f"I/O waited {sum(waited):.1f} s"
        )


def plot(directory, runs):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    for label, rows in runs:
        t = column(rows, "time_s")
        axes[0].plot(t, column(rows, "op_rate"), label=label)
        axes[1].plot(t, column(rows, "p99_ms"), label=label)
        for d in devices(rows):
            axes[2].plot(t, column(rows, f"{d}_busy"), label=f"{label} {d}")
    axes[0].set_ylabel("op/s")
    axes[1].set_ylabel("p99 ms")
    axes[2].set_ylabel("device busy")
    axes[2].set_xlabel("s")
    for a in axes:
        a.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(directory / "plot.png", dpi=100)


def main(args):
    if not args:
        print(__doc__.strip())
        return 2
    for d in map(Path, args):
        runs = [(p.name[: -len(".ops.csv")], read(p)) for p in sorted(d.glob("*.ops.csv"))]
        if not runs:
            print(f"{d}: no *.ops.csv", file=sys.stderr)
            continue
        print(d)
        for label, rows in runs:
            summarise(label, rows)
        plot(d, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
