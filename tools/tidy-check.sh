#!/usr/bin/env bash
# clang-tidy over every sim/ source with the repository's .clang-tidy: sim/ is
# kept free of clang-tidy warnings, so any warning (counted once per position,
# however many sources include the header it is in) fails the check, and so
# does a source clang-tidy could not read (an error: line).
# Usage: tools/tidy-check.sh [BUILD_DIR]   (needs BUILD_DIR/compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v clang-tidy >/dev/null || { echo "tidy-check: clang-tidy is not installed (apt-get install clang-tidy)"; exit 1; }
[ -f "$build/compile_commands.json" ] || { echo "tidy-check: $build/compile_commands.json missing (configure first)"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
nsrc=$(find sim -name '*.cpp' | wc -l)
find sim -name '*.cpp' -print0 | sort -z |
  xargs -0 -n 4 -P "$(nproc 2>/dev/null || echo 2)" clang-tidy -p "$build" --quiet >"$log" 2>&1 || true
warnings=$({ grep -E '^/.*: warning: .*\[[a-z0-9.,-]+\]$' "$log" || true; } | sed -E "s|^$PWD/||" | sort -u)
errors=$({ grep -E '^/.*: error: ' "$log" || true; } | sed -E "s|^$PWD/||" | sort -u)
nwarn=$(printf '%s' "$warnings" | grep -c . || true)
nerr=$(printf '%s' "$errors" | grep -c . || true)
if [ "$nwarn" != 0 ] || [ "$nerr" != 0 ]; then
  echo "tidy-check: $nwarn clang-tidy warnings, $nerr errors in sim/ (fix them, or NOLINT(check) with the reason):"
  printf '%s\n' "$errors" "$warnings" | grep . || true
  exit 1
fi
echo "tidy-check: $nsrc sources, no clang-tidy warnings"
