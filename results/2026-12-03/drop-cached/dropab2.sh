#!/bin/bash
# Same A/B, 64 writers of 1 KiB rows (periodic log, defaults otherwise), alternating, sync before each.
R=/work/main/results/2026-12-03/drop-cached
for i in 1 2; do
  for v in waits drop; do
    f=$R/small-$v-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
    /usr/bin/time -v /tmp/ab/rs-$v write --threads 64 --partition-size 1KiB --row-size 1KiB --json $f.json >> $f.txt 2>&1
  done
done
