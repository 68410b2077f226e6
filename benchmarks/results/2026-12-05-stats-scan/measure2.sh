#!/bin/bash
# The first filtered query on both 1M-file layouts: the jar before this change (old), with the
# statistics scan (new), with the scan and the adapter's two-class action parsing (new2); fresh
# process per run, interleaved, delta-rs beside them. JARS=dir holding the three jars.
cd /work/main
R=benchmarks/results/2026-12-04-whole-table-1m-profile
B=~/.cache/delta-replay/bench-tables
for layout in n1000000-c5000-t10-s0.02-p1-o0.05-P20-dv0.1-data n1000000-c5000-t10-s0.02-p1-o0.05-P20-dv0.1-data-ckdelta-rs-nocrc; do
  T=$B/$layout
  for i in 1 2 3; do
    for jar in old new new2; do
      echo "== first ours-$jar $layout run $i $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      .venv/bin/python $R/run.py ours first $T --jar ${JARS:-/tmp}/$jar.jar 2>/dev/null | grep RESULT
    done
    echo "== drs $layout run $i $(date +%T)"
    .venv/bin/python $R/drs.py $T
  done
done
