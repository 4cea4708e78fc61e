#!/bin/bash
# Hidden tests of rotate.sh (file names with spaces). Usage: hidden-tests.sh WORKSPACE
set -u
ws="$1"
fails=0
total=0
check() {
  local name="$1"
  shift
  total=$((total + 1))
  if "$@"; then echo "ok - $name"; else echo "not ok - $name"; fails=$((fails + 1)); fi
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
touch -d "2024-01-01 12:00" "$tmp/nightly build 15.log"
touch -d "2024-01-02 12:00" "$tmp/nightly build 16.log"
touch -d "2024-01-03 12:00" "$tmp/nightly build 17.log"
touch -d "2024-01-04 12:00" "$tmp/plain.log"
out="$(bash "$ws/rotate.sh" "$tmp" 1)"
check "exit status 0" test $? -eq 0
check "keeps the newest" test -e "$tmp/plain.log"
check "removes names with spaces" test ! -e "$tmp/nightly build 15.log" -a ! -e "$tmp/nightly build 16.log" -a ! -e "$tmp/nightly build 17.log"
check "reports whole paths" test "$(printf '%s\n' "$out" | grep -c "^removed $tmp/nightly build 1[567].log\$")" -eq 3
check "reports nothing else" test "$(printf '%s\n' "$out" | grep -c .)" -eq 3
mkdir "$tmp/empty dir"
bash "$ws/rotate.sh" "$tmp/empty dir" 0 >/dev/null
check "empty folder" test $? -eq 0
touch -d "2024-01-01 12:00" "$tmp/empty dir/a b.log"
bash "$ws/rotate.sh" "$tmp/empty dir" 0 >/dev/null
check "folder with a space, KEEP 0" test ! -e "$tmp/empty dir/a b.log"
bash "$ws/rotate.sh" "$tmp" -1 2>/dev/null
check "rejects a negative KEEP" test $? -eq 2
if [ -n "${GRADER_REPORT_FILE:-}" ]; then
  printf '{"tests": %d, "failures": %d, "score": %s}\n' "$total" "$fails" \
    "$(awk -v t="$total" -v f="$fails" 'BEGIN { printf "%.3f", (t - f) / t }')" >"$GRADER_REPORT_FILE"
fi
[ "$fails" -eq 0 ] || { echo "FAILED: $fails of $total hidden test(s)"; exit 1; }
