#!/bin/bash
# A = main at 8303530 (rs-base), B = this change (rs-new): issue 19's memory shape, cache and prefault off, 30 s, sync before each.
R=/work/main/results/2026-12-03/memory-shape
for i in 1 2; do
 for cl in periodic off; do
  for v in base new; do
   sync; f=$R/$v-$cl-$i
   echo "load $(cat /proc/loadavg)" > $f.txt
   /usr/bin/time -v /tmp/ab/rs-$v write --threads 100 --partition-size 128KiB --row-size 1KiB --budget 256MiB --no-cache --prefault off --commitlog $cl --duration 30s --json $f.json >> $f.txt 2>&1
  done
 done
done
