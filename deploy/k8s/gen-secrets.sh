#!/usr/bin/env bash
# Writes deploy/k8s/base/secrets.env (mode 0600) for the `troupe-secrets` secretGenerator: a
# password per NATS role and the job API token. Keeps an existing file unless --force.
#   deploy/k8s/gen-secrets.sh [--force] [--output file]
set -euo pipefail
out="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/base/secrets.env"
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --output) out="${2:?--output needs a file}"; shift ;;
    *) echo "gen-secrets.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
if [ -f "$out" ] && [ "$force" = 0 ]; then echo "[gen-secrets] $out exists (--force regenerates)"; exit 0; fi
# A letter first: nats-server parses variable values, and `2e68...` would read as a number.
secret() { printf 'tr%s' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
umask 077
{
  echo "nats-coordinator-password=$(secret)"
  echo "nats-node-agent-password=$(secret)"
  echo "nats-client-password=$(secret)"
  echo "grpc-token=$(secret)"
} >"$out"
echo "[gen-secrets] wrote $out"
