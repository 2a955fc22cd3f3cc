#!/bin/bash
# A = 292fe91, B = d43a175 (defaults), alternating, `sync` before each run so
# neither inherits the other's dirty page cache.
cd /tmp/ab3
for i in 1 2 3; do
  for v in A B; do
    sync
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -v ./$v --json final-$v$i.json > final-$v$i.txt 2> final-$v$i.time
    echo "final-$v$i load_start=$load load_end=$(cut -d' ' -f1 /proc/loadavg)" >> loads.txt
  done
done
echo done4 >> loads.txt
