#!/bin/bash
# A = b337727 (rs-drop), B = + sequential scans (compaction) let go of the pages they leave (rs-scan).
# README's first command (defaults, 30 s), alternating, sync before each.
R=/work/main/results/2026-12-03/scan-drop
for i in 1 2 3; do
  for v in drop scan; do
    f=$R/readme-$v-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
    /usr/bin/time -v /tmp/ab/rs-$v --json $f.json >> $f.txt 2>&1
  done
done
