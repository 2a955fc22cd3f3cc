#!/bin/bash
# The README's first command, A = b9fa12d (main), B = compaction's sequential
# scans read with O_DIRECT; alternating, 30 s each, sync before each, nothing
# else running. Binaries copied to /tmp/tr.
R=/work/main/results/2026-12-03/direct-read
for i in 1 2 3; do
  for v in A B; do
    f=$R/readme-$v$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
    /usr/bin/time -v /tmp/tr/rs-$v --json $f.json >> $f.txt 2>&1
  done
done
