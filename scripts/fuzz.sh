#!/usr/bin/env bash
# Runs every fuzz target for N seconds each (libFuzzer through the Swift toolchain, with the
# address sanitizer), starting from the committed seeds in fuzz/corpus/, and prints per target:
# executions, coverage, corpus size and crashes. Exits 1 if any target crashed.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (make fuzz SECONDS=N)
#
# The build goes to .build/fuzz (its own scratch path: the sanitizers instrument every module,
# which must not invalidate the normal build). The growing corpora and crash inputs go to
# .build/fuzz-work/; a crash input belongs in fuzz/regressions/<target>/ once understood, where
# `make test` replays it forever.
set -euo pipefail
# The server and the fuzz targets are part of the test rig (Package.swift).
export SESSION_SYNC_RIG=1
cd "$(dirname "$0")/.."

per_target="${1:-60}"
shift || true
case "$per_target" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number of seconds, not '$per_target'" >&2; exit 2 ;; esac

scratch=.build/fuzz
binary="$scratch/release/sync-fuzz"
# FUZZ_NO_BUILD=1 reuses the binary (a second run beside a first must not relink it under it).
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
    echo "building sync-fuzz with -sanitize=fuzzer,address (first build takes minutes)..."
    swift build -c release --scratch-path "$scratch" --sanitize=fuzzer --sanitize=address \
        -Xswiftc -sanitize=fuzzer,address --product sync-fuzz -Xswiftc -DFUZZING 2>&1 | grep -v "^warning: 'swift-distributed-tracing'" | tail -3
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    # The list comes from a plain build of the same source: the fuzzer binary has no `list`.
    swift build --product sync-fuzz >/dev/null 2>&1
    mapfile -t targets < <(.build/debug/sync-fuzz list)
fi

work=.build/fuzz-work
mkdir -p "$work"
report="$work/report${FUZZ_REPORT_SUFFIX:-}.txt"
printf '%-20s %12s %10s %8s %8s %8s %8s\n' target executions "exec/s" cov ft corpus crashes | tee "$report"
failed=0
for target in "${targets[@]}"; do
    [ -d "fuzz/corpus/$target" ] || { echo "fuzz.sh: no seeds in fuzz/corpus/$target" >&2; exit 2; }
    corpus="$work/corpus/$target"
    crashes="$work/crashes/$target"
    mkdir -p "$corpus" "$crashes"
    log="$work/$target.log"
    # -rss_limit_mb and -timeout bound every input; the leak checker stays on.
    set +e
    SYNC_FUZZ_TARGET="$target" "$binary" -max_total_time="$per_target" -print_final_stats=1 \
        -timeout=10 -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$crashes/" \
        "$corpus" "fuzz/corpus/$target" >"$log" 2>&1
    status=$?
    set -e
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    count=$(find "$crashes" -type f | wc -l)
    printf '%-20s %12s %10s %8s %8s %8s %8s\n' "$target" "${executions:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
        "$(find "$corpus" -type f | wc -l)" "$count" | tee -a "$report"
    if [ "$count" -ne 0 ] || [ "$status" -ne 0 ]; then
        failed=1
        echo "  $target: exit $status; inputs in $crashes/, log in $log" | tee -a "$report"
    fi
done
exit $failed
