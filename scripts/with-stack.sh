#!/usr/bin/env bash
# Runs a command with a private test stack (its own directory and ports), stopping the stack
# by pid afterwards even when the command fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export STACK_DIR=${STACK_DIR:-$(mktemp -d /tmp/session-sync-test-XXXXXX)}
export STACK_PG_PORT=${STACK_PG_PORT:-55432}
export STACK_API_PORT=${STACK_API_PORT:-55321}
export STACK_DEPLOYED_API_PORT=${STACK_DEPLOYED_API_PORT:-55322}
cleanup() {
  "$root/scripts/stack.sh" stop || true
  rm -rf "$STACK_DIR"
}
trap cleanup EXIT
"$root/scripts/stack.sh" start
# shellcheck disable=SC1091
source "$STACK_DIR/stack.env"
"$@"
