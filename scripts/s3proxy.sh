#!/usr/bin/env bash
# A real S3-compatible server (s3proxy, filesystem-nio2 backend) on 127.0.0.1 for
# delta-replay's object-store tests and benchmarks. No Docker, no mocks: the
# org.gaul:s3proxy jar-with-dependencies comes from Maven Central once
# (`mvn dependency:copy`) and is cached in build/s3proxy/.
#
#   scripts/s3proxy.sh fetch           fetch the server jar (done by start when needed)
#   scripts/s3proxy.sh s3a-jars        fetch (once) the S3A client jars for a Spark session
#                                      (hadoop-aws and the AWS SDK v2 modules S3A needs, not
#                                      the 686 MB SDK bundle; versions from build.sbt) into
#                                      build/s3proxy/s3a-jars; prints them comma-separated
#   scripts/s3proxy.sh start [DIR]     start on a free port (or S3PROXY_PORT), wait until it
#                                      answers, create the bucket(s); prints
#                                      endpoint=http://127.0.0.1:PORT access_key=.. secret_key=..
#                                      bucket=.. pid=.. dir=..
#   scripts/s3proxy.sh status [DIR]    prints running/stopped; exit 0 when running, 3 when not
#   scripts/s3proxy.sh endpoint [DIR]  prints http://127.0.0.1:PORT of a running server
#   scripts/s3proxy.sh stop [DIR]      stops the server by its process id and deletes DIR
#                                      (and the data, unless S3PROXY_DATA was given)
#
# DIR is the instance directory (properties, pid, log; data in DIR/data unless
# S3PROXY_DATA names another directory); default build/s3proxy/run/default.
# Several instances can run side by side; two instances given the same
# S3PROXY_DATA serve the same buckets (e.g. one with latency, one without).
# Environment:
#   S3PROXY_PORT        fixed port (default: a free one)
#   S3PROXY_BUCKETS     comma-separated buckets to create (default delta-replay)
#   S3PROXY_DATA        the filesystem-nio2 base directory (default DIR/data, deleted by stop)
#   S3PROXY_LATENCY     cloud-like latency in ms per operation, e.g. list=30,get=15,metadata=10
#                       ("cloud" is that default set; empty: none)
#   S3PROXY_ACCESS_KEY / S3PROXY_SECRET_KEY   test keys (defaults below; tests only)
#   S3PROXY_HEAP (default 512m), S3PROXY_START_TIMEOUT seconds (default 60),
#   S3PROXY_MAVEN_REPO  Maven local repository for the fetch (default
#                       ~/.cache/delta-replay/s3proxy-m2, apart from ~/.m2, as for Kafka)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="4.1.0"
home="$root/build/s3proxy"
jar="$home/s3proxy-$version-jar-with-dependencies.jar"
maven_repo="${S3PROXY_MAVEN_REPO:-$HOME/.cache/delta-replay/s3proxy-m2}"
heap="${S3PROXY_HEAP:-512m}"
start_timeout="${S3PROXY_START_TIMEOUT:-60}"
access_key="${S3PROXY_ACCESS_KEY:-delta-replay-test-key}"
secret_key="${S3PROXY_SECRET_KEY:-delta-replay-test-secret}"
buckets="${S3PROXY_BUCKETS:-delta-replay}"
marker=".delta-replay-s3proxy-instance"

service="s3proxy"
stop_grace=10
# shellcheck source=scripts/service.sh
source "$root/scripts/service.sh"

default_dir="$home/run/default"

fetch() {
  [ -f "$jar" ] && return 0
  command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
  mkdir -p "$home"
  exec 9>"$home/.fetch.lock"
  flock 9 # another start may be fetching right now
  if [ -f "$jar" ]; then exec 9>&-; return 0; fi
  say "fetching org.gaul:s3proxy:$version (jar-with-dependencies) with Maven into $home (once)"
  rm -rf "$home/fetch.tmp"
  if ! mvn -q -B -Dmaven.repo.local="$maven_repo" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact="org.gaul:s3proxy:$version:jar:jar-with-dependencies" \
    -DoutputDirectory="$home/fetch.tmp" >"$home/fetch.log" 2>&1; then
    cat "$home/fetch.log" >&2
    rm -rf "$home/fetch.tmp"
    die "Maven could not fetch s3proxy (log above); check that Maven Central is reachable"
  fi
  mv "$home/fetch.tmp/$(basename "$jar")" "$jar" || die "s3proxy jar missing after the fetch"
  rm -rf "$home/fetch.tmp"
  exec 9>&-
}

# The S3A client for Spark outside sbt (the object-store benchmark): the same artifacts and
# exclusions as build.sbt's Test scope, resolved by Maven from a throwaway POM.
s3a_dir="$home/s3a-jars"

sbt_version_of() { # sbt_version_of NAME: the value of `val NAME = "..."` in build.sbt
  sed -n "s/^val $1 = \"\([^\"]*\)\".*/\1/p" "$root/build.sbt" | head -n 1
}

s3a_jars() {
  if [ ! -f "$s3a_dir/.done" ]; then
    command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
    local hadoop sdk
    hadoop="$(sbt_version_of hadoopVersion)"
    sdk="$(sbt_version_of awsSdkVersion)"
    [ -n "$hadoop" ] && [ -n "$sdk" ] || die "hadoopVersion/awsSdkVersion not found in build.sbt"
    mkdir -p "$home"
    exec 8>"$home/.s3a-fetch.lock"
    flock 8
    if [ ! -f "$s3a_dir/.done" ]; then
      say "fetching hadoop-aws $hadoop and AWS SDK $sdk (s3, s3-transfer-manager, sts, apache-client) with Maven into $s3a_dir (once)"
      local work="$home/s3a-fetch.tmp" m deps=""
      rm -rf "$work" "$s3a_dir"
      mkdir -p "$work"
      for m in s3 s3-transfer-manager sts apache-client; do
        deps="$deps<dependency><groupId>software.amazon.awssdk</groupId><artifactId>$m</artifactId>"
        deps="$deps<version>$sdk</version><exclusions>"
        # Spark ships these (netty, SLF4J, commons-*), as in build.sbt
        deps="$deps<exclusion><groupId>io.netty</groupId><artifactId>*</artifactId></exclusion>"
        deps="$deps<exclusion><groupId>org.slf4j</groupId><artifactId>*</artifactId></exclusion>"
        deps="$deps<exclusion><groupId>commons-codec</groupId><artifactId>*</artifactId></exclusion>"
        deps="$deps<exclusion><groupId>commons-logging</groupId><artifactId>*</artifactId></exclusion>"
        deps="$deps</exclusions></dependency>"
      done
      cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.deltareplay.local</groupId>
  <artifactId>s3a-client-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId><version>$hadoop</version>
      <exclusions>
        <exclusion><groupId>software.amazon.awssdk</groupId><artifactId>bundle</artifactId></exclusion>
        <exclusion><groupId>org.wildfly.openssl</groupId><artifactId>*</artifactId></exclusion>
        <exclusion><groupId>org.apache.hadoop</groupId><artifactId>hadoop-common</artifactId></exclusion>
      </exclusions>
    </dependency>
    $deps
  </dependencies>
</project>
POM
      if ! mvn -q -B -f "$work/pom.xml" -Dmaven.repo.local="$maven_repo" \
        org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$work/jars" >"$home/s3a-fetch.log" 2>&1; then
        cat "$home/s3a-fetch.log" >&2
        rm -rf "$work"
        die "Maven could not fetch the S3A jars (log above); check that Maven Central is reachable"
      fi
      mv "$work/jars" "$s3a_dir"
      rm -rf "$work"
      touch "$s3a_dir/.done"
    fi
    exec 8>&-
  fi
  local jars
  jars="$(find "$s3a_dir" -maxdepth 1 -name '*.jar' | sort | paste -sd, -)"
  [ -n "$jars" ] || die "no jars in $s3a_dir: delete it and fetch again"
  echo "$jars"
}

is_ours() { # is PID the s3proxy of instance DIR? (guards against a recycled pid)
  local pid="$1" dir="$2"
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--properties $dir/s3proxy.properties"
}

latency_properties() { # S3PROXY_LATENCY -> s3proxy.latency-blobstore.* lines
  local spec="${S3PROXY_LATENCY:-}"
  [ "$spec" = "cloud" ] && spec="list=30,get=15,metadata=10"
  [ -z "$spec" ] && return 0
  local item op ms
  IFS=',' read -ra items <<<"$spec"
  for item in "${items[@]}"; do
    op="${item%%=*}"; ms="${item#*=}"
    [[ "$op" =~ ^[a-z*]+$ && "$ms" =~ ^[0-9]+$ ]] ||
      die "bad S3PROXY_LATENCY item '$item': expected op=ms, e.g. list=30,get=15,metadata=10"
    echo "s3proxy.latency-blobstore.$op.latency=$ms"
  done
}

# An S3 request signed with AWS v4 by curl; prints the HTTP status.
s3_request() { # s3_request METHOD ENDPOINT/PATH
  curl -s -o /dev/null -w '%{http_code}' -X "$1" --aws-sigv4 "aws:amz:us-east-1:s3" \
    --user "$access_key:$secret_key" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$2"
}

start() {
  local dir; dir="$(instance_dir "${1:-$default_dir}")"
  if pid="$(running_pid "$dir")"; then
    die "a server is already running in $dir (pid $pid, $(cat "$dir/endpoint")); stop it first"
  fi
  if [ -e "$dir" ] && [ ! -f "$dir/$marker" ] && [ -n "$(ls -A "$dir")" ]; then
    die "$dir exists and is not an s3proxy instance directory made by this script; pick another DIR"
  fi
  local latency
  latency="$(latency_properties)" # validated before anything is created
  fetch
  rm -rf "$dir"
  mkdir -p "$dir"
  touch "$dir/$marker"
  local data="${S3PROXY_DATA:-$dir/data}"
  mkdir -p "$data"
  data="$(cd "$data" && pwd)"
  local port="${S3PROXY_PORT:-$(free_ports 1)}"
  local endpoint="http://127.0.0.1:$port"
  {
    echo "s3proxy.endpoint=$endpoint"
    echo "s3proxy.authorization=aws-v2-or-v4"
    echo "s3proxy.identity=$access_key"
    echo "s3proxy.credential=$secret_key"
    echo "jclouds.provider=filesystem-nio2"
    echo "jclouds.filesystem.basedir=$data"
    [ -z "$latency" ] || echo "$latency"
  } >"$dir/s3proxy.properties"
  # setsid: its own session, so a Ctrl-C in the caller's terminal does not reach it.
  setsid "$java_bin" -Xms64m "-Xmx$heap" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -jar "$jar" --properties "$dir/s3proxy.properties" >"$dir/server.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$dir/pid"
  echo "$endpoint" >"$dir/endpoint"
  local waited=0
  # Ready when it answers HTTP at all (an unsigned request gets 403).
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$endpoint/" 2>/dev/null)" != "000" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$dir/server.log" >&2 || true
      rm -rf "$dir"
      die "the server exited during start-up (log above; is port $port taken?)"
    fi
    if [ "$waited" -ge $((start_timeout * 10)) ]; then
      tail -n 30 "$dir/server.log" >&2 || true
      stop_pid "$pid"
      rm -rf "$dir"
      die "the server did not answer after ${start_timeout}s (log above)"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  local b code
  IFS=',' read -ra bs <<<"$buckets"
  for b in "${bs[@]}"; do
    code="$(s3_request PUT "$endpoint/$b")"
    # 409: the bucket exists already (another instance on the same data created it).
    [ "$code" = "200" ] || [ "$code" = "409" ] || {
      stop_pid "$pid"
      rm -rf "$dir"
      die "creating bucket $b failed with HTTP $code"
    }
  done
  say "s3proxy $version up at $endpoint in $dir (pid $pid)${S3PROXY_LATENCY:+, latency $S3PROXY_LATENCY}"
  echo "endpoint=$endpoint access_key=$access_key secret_key=$secret_key bucket=${bs[0]} pid=$pid dir=$dir"
}


stop() { stop_instance "$(instance_dir "${1:-$default_dir}")" server; }

status() { status_instance "$(instance_dir "${1:-$default_dir}")" endpoint; }

endpoint() { address_of "$(instance_dir "${1:-$default_dir}")" endpoint server; }

case "${1:-help}" in
  fetch) fetch ;;
  s3a-jars) s3a_jars ;;
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  status) status "${2:-}" ;;
  endpoint) endpoint "${2:-}" ;;
  *) sed -n '2,34p' "$0" >&2; exit 2 ;;
esac
