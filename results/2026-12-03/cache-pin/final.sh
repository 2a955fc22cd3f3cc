#!/bin/bash
# fc70d15's code (the binary of 4c3d7c5): the README's first command three times,
# and issue 19's memory shape (--no-cache) with the log periodic and off,
# alternating, 30 s each, sync before each, nothing else running.
R=/work/main/results/2026-12-03/cache-pin
B=/tmp/tr/rs-C
SHAPE="write --threads 100 --partition-size 128KiB --row-size 1KiB --budget 256MiB --no-cache"
for i in 1 2 3; do
  f=$R/final-readme-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
  /usr/bin/time -v $B --json $f.json >> $f.txt 2>&1
  f=$R/final-shape-periodic-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
  /usr/bin/time -v $B $SHAPE --commitlog periodic --json $f.json >> $f.txt 2>&1
  f=$R/final-shape-off-$i; sync; echo "load $(cat /proc/loadavg)" > $f.txt
  /usr/bin/time -v $B $SHAPE --commitlog off --json $f.json >> $f.txt 2>&1
done
