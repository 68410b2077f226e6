#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft: broker + controller in one JVM)
# on 127.0.0.1, for delta-replay's tests and demos. No Docker, no download of a
# Kafka distribution: the org.apache.kafka:kafka_2.13 jars and their runtime
# dependencies come from Maven Central once (scripts/kafka/pom.xml) and are
# cached in build/kafka/lib.
#
#   scripts/kafka.sh fetch           fetch the broker jars (done by start when needed)
#   scripts/kafka.sh start [DIR]     format a fresh log directory, start on free ports,
#                                    wait until ready; prints bootstrap=127.0.0.1:PORT
#   scripts/kafka.sh status [DIR]    prints running/stopped; exit 0 when running, 3 when not
#   scripts/kafka.sh bootstrap [DIR] prints 127.0.0.1:PORT of a running broker
#   scripts/kafka.sh stop [DIR]      stops the broker by its process id and deletes DIR
#
# DIR is the instance directory (config, data, logs, pid); default
# build/kafka/run/default. Several instances can run side by side in different
# directories. Environment: KAFKA_HEAP (default 512m), KAFKA_START_TIMEOUT
# seconds (default 120), KAFKA_MAVEN_REPO (Maven local repository used for the
# fetch; default ~/.cache/delta-replay/kafka-m2, kept apart from ~/.m2 because
# Spark's Ivy reads ~/.m2 and Maven leaves poms there without their jars).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
conf_dir="$root/scripts/kafka"
kafka_home="$root/build/kafka"
lib="$kafka_home/lib"
maven_repo="${KAFKA_MAVEN_REPO:-$HOME/.cache/delta-replay/kafka-m2}"
heap="${KAFKA_HEAP:-512m}"
start_timeout="${KAFKA_START_TIMEOUT:-120}"
marker=".delta-replay-kafka-instance"

service="kafka"
stop_grace=30
# shellcheck source=scripts/service.sh
source "$root/scripts/service.sh"

default_dir="$kafka_home/run/default"

pom_stamp() { sha256sum "$conf_dir/pom.xml" | cut -c1-16; }

fetch() {
  command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
  mkdir -p "$kafka_home"
  exec 9>"$kafka_home/.fetch.lock"
  flock 9 # another start may be fetching right now
  local stamp; stamp="$(pom_stamp)"
  if [ -f "$lib/.stamp" ] && [ "$(cat "$lib/.stamp")" = "$stamp" ]; then
    exec 9>&-
    return 0
  fi
  say "fetching the Kafka broker jars with Maven into $lib (once)"
  rm -rf "$lib.tmp"
  if ! mvn -q -B -f "$conf_dir/pom.xml" -Dmaven.repo.local="$maven_repo" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$lib.tmp" \
    >"$kafka_home/fetch.log" 2>&1; then
    cat "$kafka_home/fetch.log" >&2
    rm -rf "$lib.tmp"
    die "Maven could not fetch the broker jars (log above); check that Maven Central is reachable"
  fi
  ls "$lib.tmp"/kafka_2.13-*.jar >/dev/null 2>&1 || die "kafka_2.13 jar missing after the fetch"
  echo "$stamp" >"$lib.tmp/.stamp"
  rm -rf "$lib"
  mv "$lib.tmp" "$lib"
  exec 9>&-
}

# Is PID our broker for instance DIR? (guards against a recycled pid)
is_ours() {
  local pid="$1" dir="$2"
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "kafka.Kafka $dir/server.properties"
}

cluster_id() { # a Kafka Uuid: 16 random bytes, base64url without padding
  # Like Kafka's own Uuid.randomUuid, never one that starts with "-": the storage
  # tool's argument parser reads "-t -abc..." as a missing value (1 start in 64
  # failed that way).
  python3 -c '
import base64, os
uid = "-"
while uid.startswith("-"):
    uid = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
print(uid)'
}

start() {
  local dir; dir="$(instance_dir "${1:-$default_dir}")"
  if pid="$(running_pid "$dir")"; then
    die "a broker is already running in $dir (pid $pid, bootstrap $(cat "$dir/bootstrap")); stop it first"
  fi
  if [ -e "$dir" ] && [ ! -f "$dir/$marker" ] && [ -n "$(ls -A "$dir")" ]; then
    die "$dir exists and is not a Kafka instance directory made by this script; pick another DIR"
  fi
  fetch
  rm -rf "$dir"
  mkdir -p "$dir"
  touch "$dir/$marker"
  local port controller_port
  read -r port controller_port < <(free_ports 2)
  sed -e "s|@PORT@|$port|g" -e "s|@CONTROLLER_PORT@|$controller_port|g" \
    -e "s|@LOG_DIR@|$dir/data|g" "$conf_dir/server.properties.template" >"$dir/server.properties"
  local -a jvm=(-Xms128m "-Xmx$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -Djava.awt.headless=true "-Dlog4j2.configurationFile=$conf_dir/log4j2.yaml"
    "-Dkafka.log.dir=$dir" -cp "$lib/*")
  "$java_bin" "${jvm[@]}" kafka.tools.StorageTool format -t "$(cluster_id)" \
    -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
    { cat "$dir/format.log" >&2; rm -rf "$dir"; die "formatting the log directory failed"; }
  # setsid: its own session, so a Ctrl-C in the caller's terminal does not reach it.
  setsid "$java_bin" "${jvm[@]}" kafka.Kafka "$dir/server.properties" \
    >"$dir/stdout.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$dir/pid"
  echo "127.0.0.1:$port" >"$dir/bootstrap"
  local waited=0
  until grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null && port_open "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$dir/stdout.log" "$dir/server.log" >&2 2>/dev/null || true
      rm -rf "$dir"
      die "the broker exited during start-up (log above)"
    fi
    if [ "$waited" -ge $((start_timeout * 5)) ]; then
      tail -n 30 "$dir/server.log" >&2 2>/dev/null || true
      stop_pid "$pid"
      rm -rf "$dir"
      die "the broker was not ready after ${start_timeout}s (log above)"
    fi
    sleep 0.2
    waited=$((waited + 1))
  done
  say "broker up in $dir (pid $pid)"
  echo "bootstrap=127.0.0.1:$port pid=$pid dir=$dir"
}


stop() { stop_instance "$(instance_dir "${1:-$default_dir}")" broker; }

status() { status_instance "$(instance_dir "${1:-$default_dir}")" bootstrap; }

bootstrap() { address_of "$(instance_dir "${1:-$default_dir}")" bootstrap broker; }

case "${1:-help}" in
  fetch) fetch ;;
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  status) status "${2:-}" ;;
  bootstrap) bootstrap "${2:-}" ;;
  *) sed -n '2,21p' "$0" >&2; exit 2 ;;
esac
