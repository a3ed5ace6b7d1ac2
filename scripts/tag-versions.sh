#!/usr/bin/env bash
# Tags each version of the package on the commit that sets it, so that an app can pin one
# (`.package(url: ..., from: "0.13.0")`). A version is set by the line `static let version = "X"`
# in Sources/sync-cli/SyncCLI.swift (what `sync-cli --version` prints and CHANGELOG.md heads);
# the tag is the plain version (`0.13.0`, as SwiftPM and swift-nio spell them).
#
#   scripts/tag-versions.sh           # adds the missing tags (annotated), changes no existing one
#   scripts/tag-versions.sh --check   # exit 1 when a tag names a commit of another version, or,
#                                     # in a clone that has tags, a version has none
#
# CHANGELOG.md's 0.2.0 to 0.6.0 were written afterwards, with 0.7.0, and were never set in the
# code: they have no commit of their own and no tag.
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
[[ ${1:-} == --check ]] && check=true

version_at() {
    git grep -h -o 'static let version = "[0-9.]*"' "$1" -- Sources/sync-cli 2>/dev/null | head -1 | sed 's/.*"\(.*\)"/\1/'
}

# Each commit that changed the version line, oldest first, with the version it set.
declare -A commit_of=()
order=()
previous=
while read -r commit; do
    version=$(version_at "$commit")
    [[ -n $version && $version != "$previous" ]] || continue
    [[ -z ${commit_of[$version]:-} ]] || continue
    commit_of[$version]=$commit
    order+=("$version")
    previous=$version
done < <(git log --reverse --format=%H -G'static let version = "' -- Sources/sync-cli)

status=0
# A tag that names a version must name a commit of that version.
while read -r tag; do
    [[ -n $tag ]] || continue
    tagged=$(git rev-list -n 1 "$tag")
    if [[ $(version_at "$tagged") != "$tag" ]]; then
        echo "tag-versions: tag $tag names ${tagged:0:12}, whose sync-cli version is $(version_at "$tagged")" >&2
        status=1
    fi
done < <(git tag --list '[0-9]*.[0-9]*.[0-9]*')

has_tags=$([[ -n $(git tag --list '[0-9]*.[0-9]*.[0-9]*') ]] && echo true || echo false)
for version in "${order[@]}"; do
    commit=${commit_of[$version]}
    if git rev-parse -q --verify "refs/tags/$version" >/dev/null; then continue; fi
    if $check; then
        if $has_tags; then
            echo "tag-versions: version $version (set in ${commit:0:12}) has no tag; run scripts/tag-versions.sh" >&2
            status=1
        fi
    else
        git tag -a "$version" -m "sync-cli $version" "$commit"
        echo "tagged $version at ${commit:0:12}"
    fi
done
if $check && ! $has_tags; then
    echo "tag-versions: this clone has no version tags (they did not travel with it); nothing to check" >&2
fi
exit "$status"
