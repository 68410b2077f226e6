# What the project's service scripts (kafka.sh, s3proxy.sh) share: messages, instance
# directories, finding and stopping their server process. Sourced, never run. The sourcing
# script sets `service` (its name in messages), `marker` (the file that marks an instance
# directory it made), `stop_grace` (seconds between SIGTERM and SIGKILL) and defines
# `is_ours PID DIR` (is PID the server of instance DIR? guards against a recycled pid).

java_bin="java"
[ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && java_bin="$JAVA_HOME/bin/java"

say() { echo "[$service] $*" >&2; }
die() { say "error: $*"; exit 1; }

instance_dir() { # instance_dir DIR -> its absolute path (the parent is created)
  local dir="$1"
  mkdir -p "$(dirname "$dir")"
  echo "$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")"
}

running_pid() { # running_pid DIR: prints the pid of the server of DIR, or fails
  local dir="$1"
  [ -f "$dir/pid" ] || return 1
  local pid; pid="$(cat "$dir/pid")"
  is_ours "$pid" "$dir" || return 1
  echo "$pid"
}

wait_gone() { # wait_gone PID SECONDS: succeeds once PID has exited
  local pid="$1" i
  for ((i = 0; i < $2 * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  return 1
}

stop_pid() { # SIGTERM (a controlled shutdown), then SIGKILL after stop_grace seconds
  local pid="$1"
  kill -TERM "$pid" 2>/dev/null || return 0
  wait_gone "$pid" "$stop_grace" && return 0
  say "pid $pid did not stop within ${stop_grace}s: killing it"
  kill -KILL "$pid" 2>/dev/null || true
  wait_gone "$pid" 10 || die "pid $pid survived SIGKILL"
}

stop_instance() { # stop_instance DIR WHAT: stop the server of DIR (WHAT names it), delete DIR
  local dir="$1" what="$2" pid
  if [ ! -e "$dir" ]; then
    say "no instance in $dir: nothing to stop"
    return 0
  fi
  [ -f "$dir/$marker" ] || die "$dir is not a $service instance directory made by this script"
  if pid="$(running_pid "$dir")"; then
    stop_pid "$pid"
    say "$what pid $pid stopped"
  else
    say "no $what running in $dir (stale files removed)"
  fi
  rm -rf "$dir"
}

status_instance() { # status_instance DIR KEY: "running pid=.. KEY=<DIR/KEY> dir=.." (exit 3 if not)
  local dir="$1" key="$2" pid
  if pid="$(running_pid "$dir")"; then
    echo "running pid=$pid $key=$(cat "$dir/$key") dir=$dir"
  else
    echo "stopped dir=$dir"
    return 3
  fi
}

address_of() { # address_of DIR KEY WHAT: the address a running server of DIR listens on
  local dir="$1" key="$2" what="$3"
  running_pid "$dir" >/dev/null || die "no $what running in $dir: start it with $0 start"
  cat "$dir/$key"
}

free_ports() { # free_ports N: N distinct free TCP ports on 127.0.0.1, one line
  python3 - "$1" <<'EOF'
import socket
import sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
EOF
}

port_open() { # port_open PORT: can we connect to 127.0.0.1:PORT?
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
