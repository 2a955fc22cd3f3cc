#!/bin/bash
# The README's first command, A = 9639600 (main), B = the flushed memtable pinned
# against the real limit and released as the cache update goes; alternating,
# 30 s each, sync before each, nothing else running. Binaries copied to /tmp/tr.
R=/work/main/results/2026-12-03/cache-pin
for i in 1 2 3; do
  for v in A B; do
    f=$R/readme-$v$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
    /usr/bin/time -v /tmp/tr/rs-$v --json $f.json >> $f.txt 2>&1
  done
done
