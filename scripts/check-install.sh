#!/usr/bin/env bash
# `make install PREFIX=<a temporary directory>`, then checks what it put there: the binary runs,
# the completions for bash, zsh and fish and the service files exist, and `man -l` renders the
# page.
#
#   scripts/check-install.sh           # the release build, as a user installs it (.ci/run)
#   scripts/check-install.sh debug     # the debug build the suite ran (make test: no release build)
set -euo pipefail
configuration=${1:-release}
[[ $configuration == release || $configuration == debug ]] || { echo "usage: scripts/check-install.sh [release|debug]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(mktemp -d /tmp/install-check-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
make -C "$root" --no-print-directory install PREFIX="$prefix" CONFIGURATION="$configuration" >"$prefix.log" 2>&1 || { tail -20 "$prefix.log" >&2; rm -f "$prefix.log"; exit 1; }
rm -f "$prefix.log"
fail() { echo "install-check: $*" >&2; exit 1; }
"$prefix/bin/sync-cli" --version | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+' || fail "sync-cli --version"
grep -q 'sync-cli' "$prefix/share/bash-completion/completions/sync-cli" || fail "bash completion"
grep -q '#compdef sync-cli' "$prefix/share/zsh/site-functions/_sync-cli" || fail "zsh completion"
grep -q "complete -c 'sync-cli'" "$prefix/share/fish/vendor_completions.d/sync-cli.fish" || fail "fish completion"
grep -q "ExecStart=$prefix/bin/sync-cli sync --watch" "$prefix/share/systemd/user/session-sync.service" || fail "systemd unit"
grep -q "<string>$prefix/bin/sync-cli</string>" "$prefix/share/session-sync/launchd/com.example.session-sync.plist" || fail "launchd agent"
command -v man >/dev/null 2>&1 || fail "man is missing (apt-get install man-db)"
MANWIDTH=80 man -l "$prefix/share/man/man1/sync-cli.1" 2>/dev/null | grep -q 'sync-cli' || fail "man -l does not render the page"
echo "install-check: make install PREFIX=... CONFIGURATION=$configuration installed the binary, three completions, the man page and two service files"
