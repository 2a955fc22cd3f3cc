#!/bin/bash
# B = d43a175 (prefault on, the default); P = the same binary with --prefault off
cd /tmp/ab3
for mode in default batch; do
  extra=""; [ $mode = batch ] && extra="--commitlog batch"
  for i in 1 2 3; do
    for v in B P; do
      args="$extra"; [ $v = P ] && args="$extra --prefault off"
      load=$(cut -d' ' -f1 /proc/loadavg)
      /usr/bin/time -v ./B $args --json $mode-$v$i.json > $mode-$v$i.txt 2> $mode-$v$i.time
      echo "$mode-$v$i load_start=$load load_end=$(cut -d' ' -f1 /proc/loadavg)" >> loads.txt
    done
  done
done
for lm in periodic off; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -v ./B --threads 100 --partition-size 128KiB --row-size 1KiB --budget 256MiB --commitlog $lm --json mem100-$lm.json > mem100-$lm.txt 2> mem100-$lm.time
  echo "mem100-$lm load_start=$load load_end=$(cut -d' ' -f1 /proc/loadavg)" >> loads.txt
done
echo done >> loads.txt
