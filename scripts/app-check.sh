#!/usr/bin/env bash
# Builds Examples/AppPackage (an app's package: this repository by path, its libraries, nothing
# else) with libsodium left out of the build as on Apple platforms, and runs the code of the
# article "Pull and open secrets in an iOS app" in it. The first build compiles swift-crypto's
# BoringSSL and GRDB for the example: several minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=.build/app-check
mkdir -p "$work/app"
ln -sfn "$root" "$work/session-secret-sync"
cp Examples/AppPackage/Package.swift "$work/app/"
rm -rf "$work/app/Sources" && cp -R Examples/AppPackage/Sources "$work/app/"
cd "$work/app"
export SESSION_SYNC_CRYPTO=swift-crypto
unset SESSION_SYNC_RIG SESSION_SYNC_BACKEND SESSION_SYNC_CRYPTO_BACKEND
swift build --product pull-and-open
.build/debug/pull-and-open
