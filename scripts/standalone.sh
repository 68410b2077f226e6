#!/usr/bin/env bash
# A real Spark standalone cluster on 127.0.0.1: one master and N workers, each its own JVM,
# started from the installed pyspark's `spark-class` with Spark's deploy Master and Worker
# classes (no Spark distribution to download). Applications reach it with
# `spark-submit --master spark://127.0.0.1:PORT`; each worker starts the application's
# executors as JVMs of their own, as on a real cluster.
#
#   scripts/standalone.sh start [DIR]   start the master and the workers on free ports, wait
#                                       until every worker has registered; prints
#                                       master=spark://127.0.0.1:PORT
#   scripts/standalone.sh status [DIR]  prints running/stopped; exit 0 when running, 3 when not
#   scripts/standalone.sh master [DIR]  prints spark://127.0.0.1:PORT of a running master
#   scripts/standalone.sh stop [DIR]    stops the workers (and their executors), then the
#                                       master, by process id, and deletes DIR
#
# DIR is the instance directory (logs, pids, the workers' work directories); default
# build/standalone/run/default. Environment: SPARK_HOME (default: the pyspark of the
# project's venv, else of python3), STANDALONE_WORKERS (default 2), STANDALONE_WORKER_CORES
# (default 1), STANDALONE_WORKER_MEMORY (memory each worker offers executors, default
# 1536m), STANDALONE_DAEMON_MEMORY (heap of the master and worker JVMs, default 256m),
# STANDALONE_START_TIMEOUT seconds (default 120).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
workers="${STANDALONE_WORKERS:-2}"
worker_cores="${STANDALONE_WORKER_CORES:-1}"
worker_memory="${STANDALONE_WORKER_MEMORY:-1536m}"
daemon_memory="${STANDALONE_DAEMON_MEMORY:-256m}"
start_timeout="${STANDALONE_START_TIMEOUT:-120}"
marker=".delta-replay-standalone-instance"

service="standalone"
stop_grace=30
# shellcheck source=scripts/service.sh
source "$root/scripts/service.sh"

default_dir="$root/build/standalone/run/default"

spark_home() {
  if [ -n "${SPARK_HOME:-}" ]; then
    echo "$SPARK_HOME"
    return
  fi
  local py=python3
  [ -x "$root/.venv/bin/python" ] && py="$root/.venv/bin/python"
  "$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null ||
    die "no SPARK_HOME and no pyspark for $py: run ./dev bootstrap, or set SPARK_HOME"
}

# Is PID the daemon of DIR (the master's instance directory or a worker's)? Each daemon's
# command line carries -Ddeltareplay.standalone=DIR (guards against a recycled pid).
is_ours() {
  local pid="$1" dir="$2"
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qx -- "-Ddeltareplay.standalone=$dir"
}

daemon() { # daemon DIR OPTS_VAR CLASS ARGS...: start a deploy daemon in the background
  local dir="$1" opts_var="$2" class="$3"
  shift 3
  mkdir -p "$dir"
  # spark-class passes SPARK_MASTER_OPTS / SPARK_WORKER_OPTS to the daemon's JVM and ends in
  # exec, so $! is the JVM's pid. setsid: a Ctrl-C in the caller's terminal does not reach it.
  env "$opts_var=-Ddeltareplay.standalone=$dir" SPARK_DAEMON_MEMORY="$daemon_memory" \
    SPARK_LOCAL_IP=127.0.0.1 SPARK_LOG_DIR="$dir" SPARK_NO_DAEMONIZE=1 \
    setsid "$home/bin/spark-class" "$class" "$@" >"$dir/daemon.log" 2>&1 </dev/null &
  echo "$!" >"$dir/pid"
}

wait_for() { # wait_for DIR PATTERN WHAT: until DIR/daemon.log shows PATTERN
  local dir="$1" pattern="$2" what="$3" waited=0 pid
  pid="$(cat "$dir/pid")"
  until grep -q -- "$pattern" "$dir/daemon.log" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$dir/daemon.log" >&2 || true
      return 1
    fi
    if [ "$waited" -ge $((start_timeout * 5)) ]; then
      tail -n 30 "$dir/daemon.log" >&2 || true
      say "$what was not ready after ${start_timeout}s (log above)"
      return 1
    fi
    sleep 0.2
    waited=$((waited + 1))
  done
}

start() {
  local dir; dir="$(instance_dir "${1:-$default_dir}")"
  if pid="$(running_pid "$dir")"; then
    die "a master is already running in $dir (pid $pid, $(cat "$dir/master")); stop it first"
  fi
  if [ -e "$dir" ] && [ ! -f "$dir/$marker" ] && [ -n "$(ls -A "$dir")" ]; then
    die "$dir exists and is not a standalone instance directory made by this script; pick another DIR"
  fi
  home="$(spark_home)"
  [ -x "$home/bin/spark-class" ] || die "$home/bin/spark-class not found: is SPARK_HOME a Spark home?"
  rm -rf "$dir"
  mkdir -p "$dir"
  touch "$dir/$marker"
  local port ui_port
  read -r port ui_port < <(free_ports 2)
  local url="spark://127.0.0.1:$port"
  echo "$url" >"$dir/master"
  daemon "$dir" SPARK_MASTER_OPTS org.apache.spark.deploy.master.Master \
    --host 127.0.0.1 --port "$port" --webui-port "$ui_port"
  wait_for "$dir" "I have been elected leader" master ||
    { stop "$dir" >/dev/null 2>&1 || true; die "the master did not start (log above)"; }
  local i
  for ((i = 1; i <= workers; i++)); do
    daemon "$dir/worker-$i" SPARK_WORKER_OPTS org.apache.spark.deploy.worker.Worker \
      --host 127.0.0.1 --port 0 --webui-port 0 --cores "$worker_cores" --memory "$worker_memory" \
      --work-dir "$dir/worker-$i/work" "$url"
  done
  for ((i = 1; i <= workers; i++)); do
    wait_for "$dir/worker-$i" "Successfully registered with master" "worker $i" ||
      { stop "$dir" >/dev/null 2>&1 || true; die "worker $i did not register (log above)"; }
  done
  say "master and $workers workers up in $dir (master pid $(cat "$dir/pid"))"
  echo "master=$url pid=$(cat "$dir/pid") dir=$dir"
}

stop() {
  local dir; dir="$(instance_dir "${1:-$default_dir}")"
  local worker pid
  # The workers first: a worker stopping kills the executors it started.
  for worker in "$dir"/worker-*; do
    [ -d "$worker" ] || continue
    if pid="$(running_pid "$worker")"; then
      stop_pid "$pid"
      say "worker $(basename "$worker") pid $pid stopped"
    fi
  done
  stop_instance "$dir" master
}

status() { status_instance "$(instance_dir "${1:-$default_dir}")" master; }

master() { address_of "$(instance_dir "${1:-$default_dir}")" master master; }

case "${1:-help}" in
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  status) status "${2:-}" ;;
  master) master "${2:-}" ;;
  *) sed -n '2,22p' "$0" >&2; exit 2 ;;
esac
