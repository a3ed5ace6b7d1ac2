#!/usr/bin/env bash
# Runs a command on a loaded machine: N busy processes (one spinning loop each, at normal
# priority) pinned round-robin to the cores this script may use, started before the command and
# stopped when it ends, however it ends. The command's exit status is this script's.
#
#   scripts/load.sh 2 make test                 # both cores of a two-core machine kept busy
#   scripts/load.sh 4 scripts/with-stack.sh swift test --filter ApprovalTests
#   taskset -c 0 scripts/load.sh 1 make test    # everything, and a rival, on one core
#
# docs/testing.md says why: the suite must pass on a busy machine, and this is how to make one.
set -euo pipefail

usage() {
    echo "usage: scripts/load.sh N COMMAND [ARGS...]   (N busy processes beside COMMAND)" >&2
    exit 2
}
[[ $# -ge 2 && $1 =~ ^[0-9]+$ ]] || usage
count=$1
shift

# The cores this script may use (taskset narrows them; the busy processes stay within them).
mapfile -t cores < <(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | while IFS=- read -r first last; do
    seq "$first" "${last:-$first}"
done)
[[ ${#cores[@]} -gt 0 ]] || { echo "load: cannot read this process's CPU affinity" >&2; exit 2; }

me=$$
pids=()
child=
stop() {
    [[ -n $child ]] && kill -TERM "$child" 2>/dev/null || true
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop EXIT
# A signal to this script goes to the command too; the load stops with the script.
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

for ((i = 0; i < count; i++)); do
    core=${cores[$((i % ${#cores[@]}))]}
    # Each loop checks now and then that this script still runs: killed with SIGKILL, it leaves
    # no spinning orphan behind for long.
    taskset -c "$core" bash -c 'n=0; while :; do n=$((n + 1)); if ((n % 200000 == 0)); then kill -0 '"$me"' 2>/dev/null || exit 0; fi; done' &
    pids+=("$!")
done
echo "load: $count busy process(es) on core(s) ${cores[*]}" >&2

"$@" &
child=$!
status=0
wait "$child" || status=$?
child=
exit "$status"
