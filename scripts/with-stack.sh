#!/usr/bin/env bash
# Runs a command with a private test stack (its own directory and ports), stopping the stack
# by pid afterwards even when the command fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export STACK_DIR=${STACK_DIR:-$(mktemp -d /tmp/session-sync-test-XXXXXX)}
# Free ports below the kernel's ephemeral range (32768-60999): a port there can be taken by any
# outgoing connection between the check and the bind.
free_port() {
  local port taken
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 12000))
    taken=no
    for used in "$@"; do [ "$used" = "$port" ] && taken=yes; done
    [ "$taken" = yes ] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  echo "with-stack: no free port found" >&2
  return 1
}
export STACK_PG_PORT=${STACK_PG_PORT:-$(free_port)}
export STACK_API_PORT=${STACK_API_PORT:-$(free_port "$STACK_PG_PORT")}
export STACK_DEPLOYED_API_PORT=${STACK_DEPLOYED_API_PORT:-$(free_port "$STACK_PG_PORT" "$STACK_API_PORT")}
# What the stack saw that a waiting test may have tripped on: requests answered after more than
# 5 s, statements that waited over a second for a lock, and connections PostgreSQL refused (a few
# lines of each, when any).
summarise() {
  local slow waits refused
  slow=$(grep -h "slow request\|stuck request\|stopped answering" "$STACK_DIR"/*.log 2>/dev/null || true)
  waits=$(grep -h "still waiting for\|deadlock detected" "$STACK_DIR/postgres.log" 2>/dev/null || true)
  refused=$(grep -h "FATAL: \+sorry\|FATAL: \+remaining connection" "$STACK_DIR/postgres.log" 2>/dev/null || true)
  # Here-strings, not pipes: `echo "$many" | head` can die of SIGPIPE once head has its lines,
  # and under pipefail that made a run whose every test passed exit 141 (on one loaded core).
  if [ -n "$refused" ]; then
    echo "with-stack: PostgreSQL refused $(wc -l <<<"$refused") connections:" >&2
    head -3 <<<"$refused" >&2
  fi
  if [ -n "$slow" ]; then
    echo "with-stack: $(wc -l <<<"$slow") requests answered after more than 5 s, or stuck:" >&2
    head -10 <<<"$slow" >&2
  fi
  if [ -n "$waits" ]; then
    echo "with-stack: $(wc -l <<<"$waits") lock waits over 1 s in PostgreSQL:" >&2
    head -10 <<<"$waits" >&2
  fi
}
cleanup() {
  summarise || true
  "$root/scripts/stack.sh" stop || true
  rm -rf "$STACK_DIR"
}
trap cleanup EXIT
"$root/scripts/stack.sh" start
# shellcheck disable=SC1091
source "$STACK_DIR/stack.env"
"$@"
