# shellcheck shell=bash
# Shared helpers for deploy/*.sh. Sourced, never executed.
# Callers set TAG (e.g. "kafka") before sourcing.

DEPLOY_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC2034 # used by the scripts that source this file
SERVICES_DIR="${TG_SERVICES_DIR:-$DEPLOY_DIR/.local}"
[[ "$SERVICES_DIR" == /* ]] || SERVICES_DIR="$PWD/$SERVICES_DIR"
# It is written into XML and properties files: allow plain path characters only.
if ! [[ "$SERVICES_DIR" =~ ^/[A-Za-z0-9._/+@-]*$ ]]; then
  printf '[%s] ERROR: TG_SERVICES_DIR may contain only A-Z a-z 0-9 . _ / + @ -, got %q\n' "${TAG:-deploy}" "$SERVICES_DIR" >&2
  exit 1
fi

log() { printf '[%s] %s\n' "$TAG" "$*" >&2; }

die() {
  printf '[%s] ERROR: %s\n' "$TAG" "$*" >&2
  exit 1
}

# Print the last lines of each existing file given, to stderr.
show_tail() {
  local n="$1"
  shift
  local f
  for f in "$@"; do
    if [[ -s "$f" ]]; then
      printf '[%s] ---- last %s lines of %s ----\n' "$TAG" "$n" "$f" >&2
      tail -n "$n" "$f" >&2 || true
      printf '[%s] ---- end of %s ----\n' "$TAG" "$f" >&2
    fi
  done
}

# require_port NAME VALUE: VALUE must be a TCP port number. Environment input is never
# interpolated into commands or configs unless it passed this check.
require_port() {
  local name="$1" value="$2"
  if ! [[ "$value" =~ ^[1-9][0-9]{0,4}$ ]] || ((value > 65535)); then
    die "$name must be a TCP port number, got '$value'"
  fi
}

# require_uint NAME VALUE
require_uint() {
  local name="$1" value="$2"
  [[ "$value" =~ ^(0|[1-9][0-9]{0,5})$ ]] || die "$name must be a non-negative integer, got '$value'"
}

# port_open PORT: true if something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pid_alive PIDFILE MARKER: true if the pid in PIDFILE is alive and its command line
# contains MARKER (guards against a recycled pid). Prints the pid.
pid_alive() {
  local pidfile="$1" marker="$2" pid
  [[ -f "$pidfile" ]] || return 1
  pid="$(head -c 32 "$pidfile" | tr -dc '0-9')"
  [[ -n "$pid" ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  local cmd
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmd" == *"$marker"* ]] || return 1
  printf '%s\n' "$pid"
}

# pid_gone PIDFILE: the recorded process no longer exists. Right after `cmd &` the child is
# still the shell that has not exec'd yet, so pid_alive's command-line check fails for a moment
# although nothing went wrong: wait loops give up only when the process is really gone.
pid_gone() {
  local pid
  pid="$(head -c 32 "$1" 2>/dev/null | tr -dc '0-9')"
  [[ -z "$pid" ]] || ! kill -0 "$pid" 2>/dev/null
}

# stop_pid PIDFILE MARKER GRACE_SECONDS: TERM, wait, then KILL. Only the pid in the file.
stop_pid() {
  local pidfile="$1" marker="$2" grace="$3" pid i
  if ! pid="$(pid_alive "$pidfile" "$marker")"; then
    rm -f "$pidfile"
    return 1
  fi
  log "stopping pid $pid..."
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "pid $pid still alive after ${grace} s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  kill -0 "$pid" 2>/dev/null && die "pid $pid survived KILL"
  rm -f "$pidfile"
  return 0
}

# apt_install PKG...: install Debian packages non-interactively, running
# apt-get update at most once per script run.
_APT_UPDATED=0
apt_install() {
  [[ "$(id -u)" == 0 ]] || die "need root to apt-get install $*"
  export DEBIAN_FRONTEND=noninteractive
  if [[ "$_APT_UPDATED" == 0 ]]; then
    log "apt-get update..."
    apt-get update -q >&2 || die "apt-get update failed"
    _APT_UPDATED=1
  fi
  log "apt-get install $*..."
  apt-get install -y -q --no-install-recommends "$@" >&2 || die "apt-get install $* failed"
}

now_s() { date +%s; }

# take_lock FILE: serialize start/stop/restart of one service across concurrent callers
# (two test processes calling `start` at once must not launch two servers). Held until exit.
take_lock() {
  local file="$1"
  mkdir -p "$(dirname "$file")"
  exec 9>"$file"
  if ! flock -w 300 9; then
    die "another start/stop still holds $file after 300 s"
  fi
}
