#!/bin/bash
cd /work/main
R=benchmarks/results/2026-12-04-whole-table-1m-profile
B=~/.cache/delta-replay/bench-tables
for layout in n1000000-c5000-t10-s0.02-p1-o0.05-P20-dv0.1-data n1000000-c5000-t10-s0.02-p1-o0.05-P20-dv0.1-data-ckdelta-rs-nocrc; do
  T=$B/$layout
  for i in 1 2 3; do
    for jar in old new; do
      echo "== $layout ours-$jar run $i $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      .venv/bin/python $R/run.py ours count $T --jar ${JARS:-/tmp}/$jar.jar 2>/dev/null | grep RESULT
    done
    echo "== $layout drs run $i $(date +%T)"
    .venv/bin/python $R/drs.py $T
    if [ $i -le 2 ]; then
      echo "== $layout v1 run $i $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      .venv/bin/python $R/run.py v1 count $T 2>/dev/null | grep RESULT
    fi
  done
done
