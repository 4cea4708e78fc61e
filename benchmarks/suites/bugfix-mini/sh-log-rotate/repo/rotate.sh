#!/bin/bash
# Usage: rotate.sh DIR KEEP
# Deletes all but the KEEP most recently modified *.log files in DIR.
set -eu
dir="$1"
keep="$2"
case "$keep" in
'' | *[!0-9]*)
  echo "rotate.sh: KEEP must be a non-negative integer, got '$keep'" >&2
  exit 2
  ;;
esac
count=0
for f in $(ls -t "$dir"/*.log 2>/dev/null); do
  count=$((count + 1))
  if [ "$count" -gt "$keep" ]; then
    rm -f $f
    echo "removed $f"
  fi
done
