#!/usr/bin/env bash
# The package as an app sees it: no library product reaches a system-library target of this
# package (libsodium, libcurl, libqrencode, found through pkg-config, which Xcode has not) when
# built for iOS or macOS. Reads `swift package dump-package` without the rig, as an app's
# resolution does, and fails naming the path to any such target. Then checks itself: the same
# check on a copy of the manifest with libsodium made unconditional must fail. Also: the embedded
# remote reaches neither libcurl nor swift-http-types (it implements RemoteContract, not the
# PostgREST client), checked the same way.
set -euo pipefail
cd "$(dirname "$0")/.."

dump=$(env -u SESSION_SYNC_RIG -u SESSION_SYNC_BACKEND swift package dump-package)

python3 - "$dump" <<'EOF'
import copy, json, sys

def offending(manifest):
    targets = {t["name"]: t for t in manifest["targets"]}
    problems = []
    for product in manifest["products"]:
        if "library" not in product["type"]:
            continue
        for platform in ("ios", "macos"):
            seen, stack = set(), [(name, [product["name"], name]) for name in product["targets"]]
            while stack:
                name, path = stack.pop()
                if name in seen or name not in targets:
                    continue
                seen.add(name)
                target = targets[name]
                if target["type"] == "system":
                    problems.append(f"{product['name']} on {platform}: {' -> '.join(path)}")
                for dependency in target["dependencies"]:
                    kind, value = next(iter(dependency.items()))
                    if kind == "product":
                        continue  # another package's; this check is about this package's targets
                    condition = value[-1] if len(value) > 1 else None
                    platforms = (condition or {}).get("platformNames") if isinstance(condition, dict) else None
                    if platforms and platform not in platforms:
                        continue
                    stack.append((value[0], path + [value[0]]))
    return problems

manifest = json.loads(sys.argv[1])
problems = offending(manifest)
if problems:
    print("check-app-graph: a library product reaches a system library on Apple platforms:", file=sys.stderr)
    for problem in problems:
        print("  " + problem, file=sys.stderr)
    sys.exit(1)

# The check can fail: with CSodium a dependency of SecretCrypto on every platform, it must.
mutated = copy.deepcopy(manifest)
secret = next(t for t in mutated["targets"] if t["name"] == "SecretCrypto")
secret["dependencies"].append({"byName": ["CSodium", None]})
if not offending(mutated):
    print("check-app-graph: the check did not notice an unconditional CSodium", file=sys.stderr)
    sys.exit(1)

libraries = [p["name"] for p in manifest["products"] if "library" in p["type"]]
print(f"check-app-graph: {len(libraries)} library products reach no system library on iOS or macOS")

# The embedded remote implements the contract without an HTTP client: on any platform its
# targets reach neither libcurl (CCurl) nor swift-http-types.
def http_reached(manifest, root="EmbeddedRemote"):
    targets = {t["name"]: t for t in manifest["targets"]}
    found, seen, stack = [], set(), [(root, [root])]
    while stack:
        name, path = stack.pop()
        if name in seen or name not in targets:
            continue
        seen.add(name)
        if name == "CCurl":
            found.append(" -> ".join(path))
        for dependency in targets[name]["dependencies"]:
            kind, value = next(iter(dependency.items()))
            if kind == "product":
                if value[0] == "HTTPTypes":
                    found.append(" -> ".join(path + ["HTTPTypes"]))
                continue
            stack.append((value[0], path + [value[0]]))
    return found

reached = http_reached(manifest)
if reached:
    print("check-app-graph: the embedded remote reaches an HTTP client:", file=sys.stderr)
    for path in reached:
        print("  " + path, file=sys.stderr)
    sys.exit(1)
mutated = copy.deepcopy(manifest)
embedded = next(t for t in mutated["targets"] if t["name"] == "EmbeddedRemote")
embedded["dependencies"].append({"byName": ["RemoteStore", None]})
if not http_reached(mutated):
    print("check-app-graph: the check did not notice the embedded remote depending on RemoteStore", file=sys.stderr)
    sys.exit(1)
print("check-app-graph: EmbeddedRemote reaches neither CCurl nor HTTPTypes")
EOF
