#!/usr/bin/env bash
# The cluster check of test_standalone (scripts/cluster_check.py) on another Spark line, by hand:
# `spark-submit --packages` of that line's published artifact (delta-replay-spark_<LINE>_2.13,
# with delta-spark_<LINE>_2.13 as its dependency) to a standalone master and two workers started
# from that line's pyspark. `./dev test` runs the check on a standalone cluster on 4.2 only
# (test_standalone); on 4.0 and 4.1 it submits the same check with a local[2] master, one JVM per
# line (test_packages_on_another_spark_line), as five JVMs a line do not fit its 25 minutes.
# This script is the standalone-cluster check of a line, by hand (1 min 34 s with the tables
# written).
#
#   scripts/line_cluster_check.sh LINE [WORKDIR]   LINE: 4.0, 4.1 or 4.2
#
# Needs `./dev build` (it publishes each line's jar to the local Maven repository). The line's
# venv is made on first use under ~/.cache/delta-replay/venvs/spark-LINE (as `bench ... --spark
# LINE` makes it); the TPC-H SF 0.01 tables are written once under WORKDIR (default
# build/line-cluster-check) by that line's delta-spark. Prints the check's lines; exits non-zero on
# a difference or a failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
line="${1:?usage: scripts/line_cluster_check.sh LINE [WORKDIR]}"
work="${2:-$root/build/line-cluster-check}"
main_py="$root/.venv/bin/python"
[ -x "$main_py" ] || { echo "no $main_py: run ./dev bootstrap" >&2; exit 2; }

# (making the venv prints progress lines first: the path is the last line)
python="$("$main_py" -c "
import sys
from delta_replay_bench.spark_lines import line_python
print(line_python(sys.argv[1]))" "$line" | tail -n 1)"
spark_home="$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
pyspark_version="$("$python" -c 'import pyspark; print(pyspark.__version__)')"
coordinate="$("$python" -c "
import sys
from delta_replay_bench.cluster import package, published
if not published(sys.argv[1]).is_dir():
    sys.exit(f'no published connector in {published(sys.argv[1])}: run ./dev build')
print(package(sys.argv[1]))" "$line")"
echo "[line-cluster-check] Spark $line: pyspark $pyspark_version, --packages $coordinate"

export SPARK_HOME="$spark_home" SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON="$python"
mkdir -p "$work/spark-$line"
tables="$work/spark-$line/tpch"
manifest="$("$python" -m delta_replay_bench.tpch.data --sf 0.01 --cache "$tables" --driver-memory 1g |
  sed -n 's/^MANIFEST //p')"
lineitem="$(printf '%s' "$manifest" | "$python" -c 'import json, sys; print(json.load(sys.stdin)["tables"]["lineitem"]["path"])')"

instance="$work/spark-$line/cluster"
master="$("$root/scripts/standalone.sh" start "$instance" | tr ' ' '\n' | sed -n 's/^master=//p')"
trap '"$root/scripts/standalone.sh" stop "$instance" >/dev/null || true' EXIT
check_dir="$work/spark-$line/check"
rm -rf "$check_dir" && mkdir -p "$check_dir"
# the command test_standalone submits (delta_replay_bench.cluster), with this line's artifact
mapfile -d '' submit < <("$python" -m delta_replay_bench.cluster "$spark_home" "$master" "$line" \
  "$check_dir" "$lineitem")
"${submit[@]}" 2> "$work/spark-$line/submit.log" | grep '^cluster check'
