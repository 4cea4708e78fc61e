#!/bin/bash
# Visible tests of rotate.sh. Usage: bash tests/run.sh (from the repository root).
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
fails=0
check() { # name, condition...
  local name="$1"
  shift
  if "$@"; then echo "ok - $name"; else echo "not ok - $name"; fails=$((fails + 1)); fi
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for i in 1 2 3 4; do
  touch -d "2024-01-0$i 12:00" "$tmp/app$i.log"
done
touch "$tmp/notes.txt"
bash "$here/rotate.sh" "$tmp" 2 >/dev/null
check "keeps the two newest" test -e "$tmp/app4.log" -a -e "$tmp/app3.log"
check "removes older logs" test ! -e "$tmp/app1.log" -a ! -e "$tmp/app2.log"
check "leaves other files" test -e "$tmp/notes.txt"
bash "$here/rotate.sh" "$tmp" abc 2>/dev/null
check "rejects a bad KEEP" test $? -eq 2
[ "$fails" -eq 0 ] || { echo "FAILED: $fails test(s)"; exit 1; }
