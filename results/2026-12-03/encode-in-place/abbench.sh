#!/bin/bash
# A = main at 8303530 (payload encoded into a Vec, then copied), B = encoded straight into the log's buffer.
# Same bench source (async rows per --bytes-per-sync). Alternating A,B x3.
out=$1
for i in 1 2 3; do
  for v in A B; do
    echo "=== $v$i load $(cat /proc/loadavg)" >> $out
    /tmp/ab/append-$v --only batch --bytes-per-sync direct --threads 1,64,100 --dir /tmp/ab 2>&1 | grep "^| commitlog\|^| bound" >> $out
    /tmp/ab/append-$v --only periodic --bytes-per-sync 1048576 --dir /tmp/ab 2>&1 | grep "^| commitlog\|^| Vec\|^| bound\|^| baseline" >> $out
    /tmp/ab/append-$v --only async --bytes-per-sync direct --dir /tmp/ab 2>&1 | grep "^| commitlog\|^| bound" >> $out
  done
done
