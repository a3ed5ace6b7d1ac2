#!/usr/bin/env bash
# The articles' code is the code an app's package compiles. In Examples/AppPackage/Sources, a
# block between `// snippet NAME: ARTICLE...` and `// snippet end` must be, character for
# character, the ```swift block that follows `<!-- snippet: NAME -->` in each article of
# Sources/PostLoginSync/PostLoginSync.docc it names; an article's marker must name such a block.
# Fails naming the article and showing the difference. Then checks itself: the same check on the
# articles with one character of a snippet changed must fail. `make app-check` runs it first.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 - Examples/AppPackage/Sources Sources/PostLoginSync/PostLoginSync.docc <<'EOF'
import difflib, os, re, sys

sources, catalogue = sys.argv[1], sys.argv[2]

def snippets():
    found, problems = {}, []
    for folder, _, files in sorted(os.walk(sources)):
        for name in sorted(f for f in files if f.endswith(".swift")):
            path = os.path.join(folder, name)
            current = None
            for number, line in enumerate(open(path).read().split("\n"), 1):
                opening = re.fullmatch(r"// snippet ([a-z0-9-]+): (.+)", line)
                if line == "// snippet end":
                    if current is None:
                        problems.append(f"{path}:{number}: `// snippet end` without a snippet")
                    else:
                        found[current[0]] = current[1:]
                        current = None
                elif opening:
                    snippet, articles = opening.group(1), opening.group(2).split()
                    if current is not None or snippet in found:
                        problems.append(f"{path}:{number}: snippet {snippet} opened twice or inside another")
                    current = (snippet, articles, f"{path}:{number}", [])
                elif current is not None:
                    current[3].append(line)
            if current is not None:
                problems.append(f"{current[2]}: snippet {current[0]} has no `// snippet end`")
    return {k: (articles, at, "\n".join(lines) + "\n") for k, (articles, at, lines) in found.items()}, problems

def blocks(text):
    """The ```swift block after each `<!-- snippet: NAME -->` line: name -> [code]."""
    lines, out, i = text.split("\n"), {}, 0
    while i < len(lines):
        marker = re.fullmatch(r"\s*<!-- snippet: ([a-z0-9-]+) -->\s*", lines[i])
        if marker:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            code = None
            if j < len(lines) and lines[j].strip() == "```swift":
                end = j + 1
                while end < len(lines) and lines[end].strip() != "```":
                    end += 1
                code = "\n".join(lines[j + 1:end]) + "\n"
            out.setdefault(marker.group(1), []).append(code)
        i += 1
    return out

def check(found, articles):
    problems = []
    marked = {name: blocks(text) for name, text in articles.items()}
    for snippet, (names, at, code) in sorted(found.items()):
        for article in names:
            if article not in marked:
                problems.append(f"{at}: names {article}, which is not an article of {catalogue}")
                continue
            copies = marked[article].get(snippet, [])
            if not copies:
                problems.append(f"{article}: no `<!-- snippet: {snippet} -->` before a ```swift block ({at})")
            for copy in copies:
                if copy is None:
                    problems.append(f"{article}: `<!-- snippet: {snippet} -->` is not followed by a ```swift block")
                elif copy != code:
                    diff = difflib.unified_diff(
                        code.split("\n"), copy.split("\n"), f"{at} (compiled)", f"{article} (article)", lineterm="")
                    problems.append(f"{article}: snippet {snippet} differs from the compiled code:\n" + "\n".join(diff))
    for article, found_blocks in sorted(marked.items()):
        for snippet in found_blocks:
            if snippet not in found or article not in found[snippet][0]:
                problems.append(f"{article}: `<!-- snippet: {snippet} -->` names no snippet of {sources} for it")
    return problems

found, problems = snippets()
articles = {
    name: open(os.path.join(catalogue, name)).read() for name in sorted(os.listdir(catalogue)) if name.endswith(".md")
}
problems += check(found, articles)
if problems:
    print("check-snippets: an article's code is not the compiled code:", file=sys.stderr)
    for problem in problems:
        print("  " + problem.replace("\n", "\n    "), file=sys.stderr)
    sys.exit(1)
if not found:
    print(f"check-snippets: no snippet in {sources}: nothing was checked", file=sys.stderr)
    sys.exit(1)

# The check itself: one character of each snippet changed in its first article must be caught.
for snippet, (names, _, code) in sorted(found.items()):
    drifted = dict(articles)
    drifted[names[0]] = articles[names[0]].replace(code, code.replace("(", "( ", 1), 1)
    if drifted[names[0]] == articles[names[0]] or not check(found, drifted):
        print(f"check-snippets: a changed copy of {snippet} in {names[0]} went unnoticed", file=sys.stderr)
        sys.exit(1)

uses = sum(len(names) for names, _, _ in found.values())
print(f"check-snippets: {len(found)} snippets, {uses} article blocks, each the compiled code")
EOF
