#!/bin/bash
# Old and new jar interleaved, fresh process per run, on the delta-rs layout at 1M files:
# the first filtered query and a cold count, with delta-rs and V1 in the same run.
# JARS=dir holding old.jar and new.jar.
cd /work/main
R=benchmarks/results/2026-12-04-whole-table-1m-profile
T=~/.cache/delta-replay/bench-tables/n1000000-c5000-t10-s0.02-p1-o0.05-P20-dv0.1-data-ckdelta-rs-nocrc
for measure in first count; do
  for i in 1 2 3; do
    for jar in old new; do
      echo "== $measure ours-$jar run $i $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      .venv/bin/python $R/run.py ours $measure $T --jar ${JARS:-/tmp}/$jar.jar 2>/dev/null | grep RESULT
    done
    echo "== drs run $i $(date +%T)"
    .venv/bin/python $R/drs.py $T
  done
  echo "== $measure v1 $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  .venv/bin/python $R/run.py v1 $measure $T 2>/dev/null | grep RESULT
done
