#!/usr/bin/env bash
# clang-tidy over sim/ (the repository's .clang-tidy) as a ratchet: every
# warning is counted per file and check, and the run fails when a count rises
# above tools/tidy-baseline.txt (a new warning); counts that fell are shown,
# so the baseline can be lowered (--update rewrites it). Warnings in headers
# are counted once however many sources include them.
# Usage: tools/tidy-check.sh [--update] [BUILD_DIR]   (needs BUILD_DIR/compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."
update=0
if [ "${1:-}" = --update ]; then update=1; shift; fi
build=${1:-build}
baseline=tools/tidy-baseline.txt
command -v clang-tidy >/dev/null || { echo "tidy-check: clang-tidy is not installed (apt-get install clang-tidy)"; exit 1; }
[ -f "$build/compile_commands.json" ] || { echo "tidy-check: $build/compile_commands.json missing (configure first)"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
find sim -name '*.cpp' -print0 | sort -z |
  xargs -0 -n 4 -P "$(nproc 2>/dev/null || echo 2)" clang-tidy -p "$build" --quiet >"$log" 2>/dev/null || true
# "path:line:col: warning: text [check]" -> unique by position -> "count path check"
current=$(grep -E '^/.*: warning: .*\[[a-z0-9.,-]+\]$' "$log" |
  sed -E "s|^$PWD/||" | sort -u |
  sed -E 's/^([^:]+):[0-9]+:[0-9]+: warning: .*\[([a-z0-9.,-]+)\]$/\1 \2/' |
  sort | uniq -c | awk '{print $2, $3, $1}')
total=$(printf '%s\n' "$current" | awk 'NF {s += $3} END {print s + 0}')
if [ $update = 1 ]; then
  { echo "# clang-tidy warnings per file and check (tools/tidy-check.sh --update); may only fall"
    printf '%s\n' "$current"; } >"$baseline"
  echo "tidy-check: baseline written, $total warnings"
  exit 0
fi
worse=$(join -a1 -e 0 -o 0,1.2,1.3,2.3 \
  <(printf '%s\n' "$current" | awk 'NF {print $1"|"$2, $1, $3}' | sort) \
  <(grep -v '^#' "$baseline" | awk 'NF {print $1"|"$2, $1, $3}' | sort) |
  awk '$3 > $4 {print "  " $2 ": " $3 " warnings of " substr($1, index($1, "|") + 1) " (baseline " $4 ")"}')
base_total=$(grep -v '^#' "$baseline" | awk 'NF {s += $3} END {print s + 0}')
if [ -n "$worse" ]; then
  echo "tidy-check: new clang-tidy warnings (run clang-tidy -p $build FILE to see them):"
  printf '%s\n' "$worse"
  exit 1
fi
echo "tidy-check: $total warnings, baseline $base_total: no new ones"
[ "$total" -lt "$base_total" ] && echo "tidy-check: fewer than the baseline; lower it with tools/tidy-check.sh --update"
exit 0
