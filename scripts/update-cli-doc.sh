#!/usr/bin/env bash
# Regenerates every `kloop ... --help` block in docs/cli.md from the built binary, so the page
# stays identical to --help (tests/unit/cli/cli_doc_test.cpp fails when they drift).
# A block is a marker line `<!-- kloop-help VERB... -->` followed by a ```text fence.
set -euo pipefail
cd "$(dirname "$0")/.."
kloop=${KLOOP:-./build/src/kloop}
doc=docs/cli.md
tmp=$(mktemp)
awk -v kloop="$kloop" '
  /^<!-- kloop-help/ {
    print
    args = $0; sub(/^<!-- kloop-help ?/, "", args); sub(/ ?-->$/, "", args)
    # skip the old fenced block
    while ((getline line) > 0) { if (line ~ /^```text/) break }
    while ((getline line) > 0) { if (line ~ /^```$/) break }
    print "```text"
    cmd = kloop " " args " --help"
    while ((cmd | getline out) > 0) print out
    close(cmd)
    print "```"
    next
  }
  { print }
' "$doc" > "$tmp"
mv "$tmp" "$doc"
echo "updated $doc"
