#!/bin/bash
# Issue 19's memory shape, A = b9fa12d (buffered scans), C = 4b1473f's
# binary (direct scans), log off and periodic, alternating, 30 s each,
# sync before each, nothing else running. Binaries copied to /tmp/tr.
R=/work/main/results/2026-12-03/memory-shape-final
for i in 1 2 3; do
  for log in off periodic; do
    for v in A C; do
      f=$R/ab-$log-$v$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
      /usr/bin/time -v /tmp/tr/rs-$v write --threads 100 --partition-size 128KiB --row-size 1KiB --budget 256MiB --no-cache --commitlog $log --json $f.json >> $f.txt 2>&1
    done
  done
done
