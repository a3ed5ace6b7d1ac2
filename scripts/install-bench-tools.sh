#!/usr/bin/env bash
# Installs the load generator `make bench-push` runs beside the push worker: h2load, from
# Debian's nghttp2-client. As root it uses apt-get; otherwise it says what to install. Without
# it, the benchmark prints the worker's figures alone.
set -euo pipefail
command -v h2load >/dev/null 2>&1 && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "install-bench-tools: installing nghttp2-client (h2load)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends nghttp2-client >/dev/null 2>&1 || {
    apt-get update >/dev/null
    apt-get install -y --no-install-recommends nghttp2-client >/dev/null
  }
else
  echo "install-bench-tools: h2load is missing; install it with: sudo apt-get install nghttp2-client" >&2
fi
