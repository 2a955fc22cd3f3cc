#!/bin/bash
# A = bf43678 (rs-final: the log lets go of a flushed memtable's entries, removing segments, before its memory is released),
# B = the memory released first (rs-release). README's first command, alternating, 30 s, sync before each.
R=/work/main/results/2026-12-03/release-first
for i in 1 2 3; do
  for v in final release; do
    f=$R/readme-$v-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
    /usr/bin/time -v /tmp/ab/rs-$v --json $f.json >> $f.txt 2>&1
  done
done
