#!/bin/bash
# Issue 19's memory shape with the defaults but --no-cache (prefault on, the default):
# base = main at 8303530 (prefaults the whole pool, 2x the budgets), new3 = 090fd3a+ (prefaults the user budget).
# Then new3 with the cache on (the full defaults). 30 s each, sync before each.
R=/work/main/results/2026-12-03/memory-shape
run() { # name binary args...
  local f=$R/$1; shift; local b=$1; shift
  sync; echo "load $(cat /proc/loadavg)" > $f.txt
  /usr/bin/time -v /tmp/ab/$b write --threads 100 --partition-size 128KiB --row-size 1KiB --budget 256MiB --duration 30s --json $f.json "$@" >> $f.txt 2>&1
}
for i in 1 2; do
 for cl in periodic off; do
  run nocache-base-$cl-$i rs-base --no-cache --commitlog $cl
  run nocache-new-$cl-$i rs-new3 --no-cache --commitlog $cl
 done
done
for cl in periodic off; do run cache-new-$cl rs-new3 --commitlog $cl; done
