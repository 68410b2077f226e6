#!/bin/bash
# V1's first filtered query on the default layout, and a cold count with the final jar (new2)
# beside the jar before this change (old) on both layouts; fresh process per run.
cd /work/main
R=benchmarks/results/2026-12-04-whole-table-1m-profile
B=~/.cache/delta-replay/bench-tables
D=$B/n1000000-c5000-t10-s0.02-p1-o0.05-P20-dv0.1-data
echo "== first v1 default $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
.venv/bin/python $R/run.py v1 first $D 2>/dev/null | grep RESULT
for layout in default delta-rs; do
  T=$D
  [ $layout = delta-rs ] && T=$D-ckdelta-rs-nocrc
  for i in 1 2; do
    for jar in old new2; do
      echo "== count ours-$jar $layout run $i $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      .venv/bin/python $R/run.py ours count $T --jar ${JARS:-/tmp}/$jar.jar 2>/dev/null | grep RESULT
    done
  done
done
