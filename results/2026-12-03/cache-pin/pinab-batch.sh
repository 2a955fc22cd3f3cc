#!/bin/bash
# As pinab.sh, with --commitlog batch.
R=/work/main/results/2026-12-03/cache-pin
for i in 1 2 3; do
  for v in A B; do
    f=$R/batch-$v$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
    /usr/bin/time -v /tmp/tr/rs-$v --commitlog batch --json $f.json >> $f.txt 2>&1
  done
done
