#!/usr/bin/env python3
"""Per-second op-rate spread of replica-stress *.ops.csv files: mean, sd,
coefficient of variation, min, p5, median, p95, max, seconds with no
operation, errors. The first 5 seconds and the partial last one are left out.

    python3 results/spread.py results/2026-12-02/issue22-*/*.ops.csv
"""
import csv, sys, statistics as st
for f in sys.argv[1:]:
    rows=list(csv.DictReader(open(f)))
    r=[float(x['op_rate']) for x in rows[5:-1]]  # skip 5 s warm-up and the partial last second
    errs=sum(int(x['errors']) for x in rows)
    r.sort()
    q=lambda p: r[min(len(r)-1,int(p*len(r)))]
    print(f"{f}: seconds {len(r)} mean {st.mean(r):.0f} sd {st.pstdev(r):.0f} cv {st.pstdev(r)/st.mean(r):.2f} min {r[0]:.0f} p5 {q(0.05):.0f} median {q(0.5):.0f} p95 {q(0.95):.0f} max {r[-1]:.0f} zero-seconds {sum(1 for x in r if x==0)} errors {errs}")
