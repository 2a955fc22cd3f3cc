#!/bin/bash
# The README's first command and --commitlog batch at bf43678 (the final state of this session's code),
# alternating, 30 s each, sync before each, nothing else running.
R=/work/main/results/2026-12-03/final
for i in 1 2 3; do
  f=$R/readme-periodic-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
  /usr/bin/time -v /tmp/ab/rs-final --json $f.json >> $f.txt 2>&1
  f=$R/readme-batch-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
  /usr/bin/time -v /tmp/ab/rs-final --commitlog batch --json $f.json >> $f.txt 2>&1
done
