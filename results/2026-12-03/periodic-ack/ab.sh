#!/usr/bin/env bash
# A = replica-stress at 0d61e28 (periodic add acknowledged once buffered),
# B = the same with periodic add acknowledged once written. README's first
# command's defaults, 30 s each, alternating, a sync before each run.
set -u
out=${OUT:-.}
for run in 1 2; do
  for v in ${VARIANTS:-A B}; do
    sync; sleep 2
    echo "$v$run load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/loads.txt"
    /usr/bin/time -v /tmp/ab/$v "$@" --json "$out/$v$run.json" > "$out/$v$run.txt" 2> "$out/$v$run.time"
  done
done
