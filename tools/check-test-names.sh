#!/usr/bin/env bash
# Checks what catch_discover_tests needs of the Catch2 test names: each case
# becomes one ctest, so a name with ';' (a CMake list separator), '[' or ']'
# (read as a tag filter) or a leading '--' (read as an option) would be a
# ctest that runs nothing or something else. Also checks that the ctest
# groups of CMakeLists.txt cover every case exactly once.
# Usage: tools/check-test-names.sh BUILD/kvmsim_tests
set -euo pipefail
bin=${1:?usage: check-test-names.sh KVMSIM_TESTS}
names=$( ("$bin" --list-test-names-only || true) | sed '/^$/d')  # exit status = number listed
total=$(printf '%s\n' "$names" | wc -l)
bad=$(printf '%s\n' "$names" | grep -nE '[][;]|^--' || true)
if [ -n "$bad" ]; then
  echo "check-test-names: these test names break ctest discovery (';', '[', ']' or a leading '--'):"
  printf '%s\n' "$bad"
  exit 1
fi
sum=0
for spec in "~[cli]~[t1]~[kut]~[validate]" "[cli]~[kut]" "[t1]" "[kut]" "[validate]"; do
  n=$( ("$bin" --list-test-names-only "$spec" || true) | sed '/^$/d' | wc -l)
  sum=$((sum + n))
done
if [ "$sum" -ne "$total" ]; then
  echo "check-test-names: the ctest groups hold $sum cases, the binary has $total (a case is in no group or in two)"
  exit 1
fi
echo "check-test-names: $total test names fit ctest, each in one group"
