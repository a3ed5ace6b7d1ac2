#!/usr/bin/env bash
# Runs every ```sh block of README.md the way a newcomer would, from the clone, in order, in one
# throwaway directory: the block's /tmp/ paths are moved under it and HOME points into it. A
# block right after a `<!-- readme-check: skip (why) -->` line is listed, not run. Fails at the
# first command that fails. `make test` runs it after the suite with the rig still on
# (SESSION_SYNC_RIG=1), so the README's `swift build` finds the suite's build and compiles
# nothing; run alone, it builds as a newcomer does. (A build with the rig off shares .build/ and
# recompiled about a minute of modules, then the install check compiled them back.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sandbox=$(mktemp -d /tmp/readme-check-XXXXXX)
trap 'rm -rf "$sandbox"' EXIT
mkdir -p "$sandbox/home"

python3 - "$root/README.md" "$sandbox" <<'PY'
import re, sys, os
readme, sandbox = sys.argv[1], sys.argv[2]
lines = open(readme).read().split('\n')
blocks, skip, i, n = [], None, 0, 0
while i < len(lines):
    line = lines[i].strip()
    m = re.match(r'<!-- readme-check: skip \((.*)\) -->', line)
    if m:
        skip = m.group(1)
    elif line.startswith('```sh'):
        j = i + 1
        while not lines[j].strip().startswith('```'):
            j += 1
        body = '\n'.join(l.strip() if lines[i].startswith(' ') else l for l in lines[i + 1:j])
        n += 1
        blocks.append((n, i + 1, skip, body))
        skip = None
        i = j
    elif line:
        skip = skip if line.startswith('<!--') else None
    i += 1
script = ['set -euo pipefail']
for n, at, why, body in blocks:
    if why:
        print(f'readme-check: block {n} (README.md:{at}) not run: {why}', file=sys.stderr)
        continue
    print(f'readme-check: block {n} (README.md:{at}) runs', file=sys.stderr)
    script.append(f'echo "readme-check: block {n}" >&2')
    script.append(body.replace('/tmp/', sandbox + '/'))
open(os.path.join(sandbox, 'readme.sh'), 'w').write('\n'.join(script) + '\n')
PY
env -u SYNC_STORE_DIR -u SYNC_REMOTE -u SYNC_EMAIL -u SYNC_PASSWORD -u SYNC_ACCESS_TOKEN \
  HOME="$sandbox/home" XDG_DATA_HOME="$sandbox/home/.local/share" bash "$sandbox/readme.sh" >"$sandbox/out.log" 2>&1 || {
  echo "readme-check: a README command failed; its output:" >&2
  tail -n 40 "$sandbox/out.log" >&2
  exit 1
}
[ "${README_CHECK_VERBOSE:-}" = 1 ] && cat "$sandbox/out.log"
echo "readme-check: every runnable README block ran"
