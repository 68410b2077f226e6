#!/bin/bash
# The cold whole-table figures of issue 62 item 3 with the jar of HEAD, runs interleaved per
# layout: delta-rs load + add actions, our count(*) and unfiltered plan, V1's count(*); then one
# JFR-recorded run of each of ours (step profile). Fresh process per run; RESULT lines to stdout.
cd /work/main
R=benchmarks/results/2026-12-04-whole-table-1m-profile
B=~/.cache/delta-replay/bench-tables
D=$B/n1000000-c5000-t10-s0.02-p1-o0.05-P20-dv0.1-data
for layout in default delta-rs; do
  T=$D
  [ $layout = delta-rs ] && T=$D-ckdelta-rs-nocrc
  for i in 1 2 3; do
    echo "== drs $layout run $i $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    .venv/bin/python $R/drs.py $T 2>/dev/null | grep RESULT
    for m in count plan; do
      echo "== $m ours $layout run $i $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      .venv/bin/python $R/run.py ours $m $T 2>/dev/null | grep RESULT
    done
  done
  echo "== count v1 $layout $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  .venv/bin/python $R/run.py v1 count $T 2>/dev/null | grep RESULT
  for m in count plan; do
    echo "== $m ours $layout jfr $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    .venv/bin/python $R/run.py ours $m $T --jfr /tmp/steps-$layout-$m.jfr 2>/dev/null | grep RESULT
  done
done
