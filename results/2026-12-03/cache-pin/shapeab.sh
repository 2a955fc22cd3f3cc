#!/bin/bash
# Issue 19's memory shape (--no-cache, log periodic), A = 9639600 against C = the
# binary of 4c3d7c5 (whose changes touch only tables with a cache), alternating,
# 30 s each, sync before each, nothing else running.
R=/work/main/results/2026-12-03/cache-pin
SHAPE="write --threads 100 --partition-size 128KiB --row-size 1KiB --budget 256MiB --no-cache --commitlog periodic"
while pgrep -f final.sh >/dev/null; do sleep 2; done
for i in 1 2; do
  for v in A C; do
    f=$R/shapeab-$v$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
    /usr/bin/time -v /tmp/tr/rs-$v $SHAPE --json $f.json >> $f.txt 2>&1
  done
done
