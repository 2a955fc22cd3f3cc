#!/bin/bash
# The periodic log's buffer budget: default (17 MiB: largest entry + 1 MiB) against 4 MiB,
# same binary (LOG_BUDGET_MIB, an experiment-only override), alternating, sync before each.
R=/work/main/results/2026-12-03/log-budget
run() { local f=$R/$1; shift; sync; echo "load $(cat /proc/loadavg)" > $f.txt; /usr/bin/time -v "$@" >> $f.txt 2>&1; }
for i in 1 2 3; do
  run readme-A$i /tmp/ab/rs-budget --json $R/readme-A$i.json
  LOG_BUDGET_MIB=4 run readme-B$i /tmp/ab/rs-budget --json $R/readme-B$i.json
done
for i in 1 2; do
  run mem-A$i /tmp/ab/rs-budget write --threads 100 --partition-size 128KiB --row-size 1KiB --budget 256MiB --no-cache --duration 30s --json $R/mem-A$i.json
  LOG_BUDGET_MIB=4 run mem-B$i /tmp/ab/rs-budget write --threads 100 --partition-size 128KiB --row-size 1KiB --budget 256MiB --no-cache --duration 30s --json $R/mem-B$i.json
done
