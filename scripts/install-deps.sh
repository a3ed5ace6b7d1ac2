#!/usr/bin/env bash
# Installs the system libraries the package links (libsodium, libsqlite3, libqrencode, libcurl), and
# openssl and man-db for the tests, when they are missing.
# As root it uses apt-get; otherwise it says what to install and fails.
set -euo pipefail

missing=()
pkg-config --exists libsodium 2>/dev/null || missing+=(libsodium-dev)
pkg-config --exists sqlite3 2>/dev/null || missing+=(libsqlite3-dev)
pkg-config --exists libqrencode 2>/dev/null || missing+=(libqrencode-dev)
pkg-config --exists libcurl 2>/dev/null || missing+=(libcurl4-openssl-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
# The tests' APNs imitation makes its TLS certificate with openssl.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# make test checks that `make install`'s man page renders (man -l).
command -v man >/dev/null 2>&1 || missing+=(man-db)

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    apt-get update >/dev/null
    apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
  }
else
  echo "install-deps: missing system packages: ${missing[*]}" >&2
  echo "install-deps: install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
