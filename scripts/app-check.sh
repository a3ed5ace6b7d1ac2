#!/usr/bin/env bash
# Builds Examples/AppPackage (an app's package: this repository by path, its libraries, nothing
# else) with libsodium left out of the build as on Apple platforms, and runs the code of the
# article "Pull and open secrets in an iOS app" in it: first where it stands in the repository,
# then a copy outside it whose one dependency line is rewritten to this repository's absolute
# path, which shows that the line is all a copy needs to change (Examples/AppPackage/README.md).
# Before building, scripts/check-snippets.sh checks that the articles' code is the compiled code.
# Build products go to .build/app-check, nothing into Examples/ but SwiftPM's Package.resolved
# (ignored). The two builds share it; each plans afresh (--disable-build-manifest-caching: a
# cached plan would build the other root's sources), so only the example's module is compiled
# twice. The first build compiles swift-crypto's BoringSSL and GRDB: several minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch=$root/.build/app-check
example=Examples/AppPackage

scripts/check-snippets.sh
# What the earlier layout left (a copy of the package and a link to this repository).
rm -rf "$scratch/app" "$scratch/session-secret-sync"

export SESSION_SYNC_CRYPTO=swift-crypto
unset SESSION_SYNC_RIG SESSION_SYNC_BACKEND SESSION_SYNC_CRYPTO_BACKEND

# Where it stands: `../..` is this repository.
echo "app-check: building $example where it stands"
swift build --package-path "$example" --scratch-path "$scratch" --disable-build-manifest-caching --product pull-and-open
"$scratch/debug/pull-and-open"

# A copy elsewhere (a fresh temporary folder), with only the dependency line changed.
copy=$(mktemp -d /tmp/app-check-copy-XXXXXX)
trap 'rm -rf "$copy"' EXIT
cp -R "$example/." "$copy/"
rm -rf "$copy/.build" "$copy/.swiftpm" "$copy/Package.resolved"
line='let sessionSecretSync: Package.Dependency = .package(name: "session-secret-sync", path: "../..")'
[ "$(grep -cxF "$line" "$copy/Package.swift")" = 1 ] || {
  echo "app-check: $example/Package.swift must hold exactly this line, the one a copy changes:" >&2
  echo "  $line" >&2
  exit 1
}
moved=${line/\"..\/..\"/\"$root\"}
python3 - "$copy/Package.swift" "$line" "$moved" <<'EOF'
import sys
path, line, moved = sys.argv[1:]
text = open(path).read()
open(path, "w").write(text.replace(line, moved))
EOF
changed=$(diff "$example/Package.swift" "$copy/Package.swift" | grep -c '^[<>]' || true)
[ "$changed" = 2 ] || { echo "app-check: the copy differs in more than the one line" >&2; exit 1; }
echo "app-check: building a copy in $copy, its one changed line: ${moved#*= }"
swift build --package-path "$copy" --scratch-path "$scratch" --disable-build-manifest-caching --product pull-and-open
"$scratch/debug/pull-and-open"
