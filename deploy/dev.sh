#!/usr/bin/env bash
# The README's two commands, and the set-up they share.
#
#   bash deploy/dev.sh demo    # venv + install, then the embedded demo (no servers)
#   bash deploy/dev.sh test    # venv + install, start Kafka + ClickHouse on loopback,
#                              # lint, type-check, run every test; stop what it started
#
# Extra arguments after `test` go to pytest (e.g. `-k sink`); after `demo` to the demo.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TG_VENV:-$REPO/.venv}"
PY="$VENV/bin/python"
say() { printf '[dev] %s\n' "$*" >&2; }

# setup EXTRAS: the demo needs the embedded store, the server and the console
# (DEMO_EXTRAS); the tests need the dev extra, which is every role plus the test tools
# (PyTorch for the real torch.distributed job test among them, a multi-GB download).
DEMO_EXTRAS="embedded,server,console"
setup() {
  local extra="${1:-}" stamp="$VENV/.installed${1:+-$1}" target="$REPO"
  [[ -n "$extra" ]] && target="$REPO[$extra]"
  if [[ ! -x "$PY" ]]; then
    say "creating virtual environment $VENV"
    python3 -m venv "$VENV"
  fi
  if [[ ! -f "$stamp" || "$REPO/pyproject.toml" -nt "$stamp" ]]; then
    say "installing TrainGuard${extra:+ and its $extra tools} (first time: a few minutes)"
    "$PY" -m pip install --quiet --upgrade pip
    "$PY" -m pip install --quiet -e "$target"
    touch "$stamp"
  fi
}

demo() {
  setup "$DEMO_EXTRAS"
  cd "$REPO"
  "$VENV/bin/trainguard" demo "$@"
}

# Debian's Chromium and its driver, for the console's browser tests (tests/e2e).
browser() {
  command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 && return 0
  # shellcheck disable=SC1091,SC2034 # TAG is read by common.sh's log and die
  (TAG=dev && source "$REPO/deploy/lib/common.sh" && apt_install chromium chromium-driver)
}

# Prometheus and Alertmanager (Debian) and helm (built from the Go module proxy), for the
# operability tests: real scrapes, real alerts, the chart rendered and linted; ZooKeeper.
HELM_VERSION="v3.22.0"
tools() {
  if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus-alertmanager >/dev/null 2>&1; then
    # shellcheck disable=SC1091,SC2034 # TAG is read by common.sh's log and die
    (TAG=dev && source "$REPO/deploy/lib/common.sh" && apt_install prometheus prometheus-alertmanager)
  fi
  # ZooKeeper, for the ClickHouse cluster of deploy/clickhouse_cluster.sh and deploy/cluster.sh
  # (they install it on demand too; here it is done before the tests' clocks start)
  if ! compgen -G "/usr/share/java/zookeeper*.jar" >/dev/null; then
    # shellcheck disable=SC1091,SC2034 # TAG is read by common.sh's log and die
    (TAG=dev && source "$REPO/deploy/lib/common.sh" && apt_install zookeeper)
  fi
  if [[ ! -x "$VENV/bin/helm" ]]; then
    say "building helm $HELM_VERSION from the Go module proxy (first time: a few minutes)"
    GOBIN="$VENV/bin" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  fi
}

test_all() {
  setup dev
  browser
  tools
  cd "$REPO"
  local started=0
  if ! bash deploy/services.sh status >/dev/null 2>&1; then
    started=1
  fi
  if [[ "$started" == 1 && "${TG_KEEP_SERVICES:-0}" != 1 ]]; then
    trap 'bash "$REPO/deploy/services.sh" stop || true' EXIT
  fi
  TG_PYTHON="$PY" bash deploy/services.sh start
  # shellcheck disable=SC1091 # written by services.sh start
  source "${TG_SERVICES_DIR:-$REPO/deploy/.local}/env"
  say "lint (ruff) and types (mypy)"
  "$VENV/bin/ruff" check .
  "$VENV/bin/ruff" format --check .
  "$VENV/bin/mypy"
  say "tests"
  PATH="$VENV/bin:$PATH" "$PY" -m pytest -q -rfExX -p no:cacheprovider "$@"
}

case "${1:-}" in
  demo) shift; demo "$@" ;;
  test) shift; test_all "$@" ;;
  setup) setup dev; tools ;;
  *) echo "usage: bash deploy/dev.sh demo|test|setup [args]" >&2; exit 2 ;;
esac
