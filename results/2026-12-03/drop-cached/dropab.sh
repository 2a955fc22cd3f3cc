#!/bin/bash
# A = f8e9821 (rs-waits), B = the periodic log dropping its written-back pages 8 MiB behind (rs-drop).
# README's first command (defaults, 30 s), alternating, sync before each.
R=/work/main/results/2026-12-03/drop-cached
for i in 1 2 3; do
  for v in waits drop; do
    f=$R/readme-$v-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
    /usr/bin/time -v /tmp/ab/rs-$v --json $f.json >> $f.txt 2>&1
  done
done
