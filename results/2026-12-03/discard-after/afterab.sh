#!/bin/bash
# A = 75ce2c4 (the log lets go of a flush's entries before the flush is reported finished),
# B = after it (the next flush need not wait). README's first command, alternating, 30 s, sync before each.
R=/work/main/results/2026-12-03/discard-after
for i in 1 2 3; do
  for v in before after; do
    f=$R/readme-$v-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
    /usr/bin/time -v /tmp/ab/rs-$v --json $f.json >> $f.txt 2>&1
  done
done
