#!/usr/bin/env bash
# Prints the vector files of a shared folder (argument 1) that the vendored copies under
# testvectors/third_party/ do not already hold byte for byte, so `make test` verifies them too.
# Prints nothing when the folder does not exist (a clone on its own).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${1:-}
[ -n "$shared" ] && [ -d "$shared" ] || exit 0
find "$shared" -name '*.json' | sort | while read -r file; do
  same=no
  for vendored in "$root"/testvectors/third_party/*/*.json; do
    if cmp -s "$file" "$vendored"; then same=yes; break; fi
  done
  if [ "$same" = no ]; then echo "$file"; fi
done
