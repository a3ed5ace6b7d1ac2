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

def reached(manifest, roots, platform=None):
    """Every (dependency, path) the targets `roots` reach: this package's targets, and other
    packages' products (not followed); with `platform`, only dependencies that apply there."""
    targets = {t["name"]: t for t in manifest["targets"]}
    seen, stack = set(), [(name, [name]) for name in roots]
    while stack:
        name, path = stack.pop()
        if name in seen or name not in targets:
            continue
        seen.add(name)
        yield targets[name], path
        for dependency in targets[name]["dependencies"]:
            kind, value = next(iter(dependency.items()))
            if kind == "product":
                yield {"name": value[0], "type": "product"}, path + [value[0]]
                continue
            condition = value[-1] if len(value) > 1 else None
            platforms = (condition or {}).get("platformNames") if isinstance(condition, dict) else None
            if platform and platforms and platform not in platforms:
                continue
            stack.append((value[0], path + [value[0]]))


def offending(manifest):
    problems = []
    for product in manifest["products"]:
        if "library" not in product["type"]:
            continue
        for platform in ("ios", "macos"):
            for target, path in reached(manifest, product["targets"], platform):
                if target["type"] == "system":
                    problems.append(f"{product['name']} on {platform}: {' -> '.join([product['name']] + path)}")
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
    return [" -> ".join(path) for target, path in reached(manifest, [root]) if target["name"] in ("CCurl", "HTTPTypes")]

http = http_reached(manifest)
if http:
    print("check-app-graph: the embedded remote reaches an HTTP client:", file=sys.stderr)
    for path in http:
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
