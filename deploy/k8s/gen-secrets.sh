#!/usr/bin/env bash
# Writes deploy/k8s/base/secrets.env (mode 0600) for the `troupe-secrets` secretGenerator: a
# password per NATS role and the job API token. Keeps an existing file unless --force.
# Also writes overlays/models/model-keys.env (mode 0600) for the `troupe-model-keys` Secret of
# overlays/models: the model API keys, NAME=key for the variables the models file names
# (apiKeyEnv), which only the coordinators and agent hosts get. --model-key NAME takes $NAME from
# this shell's environment (keeps it out of your shell history), --model-key NAME=VALUE the given
# value; given --model-key the file is rewritten, otherwise an empty one is written when missing.
#   deploy/k8s/gen-secrets.sh [--force] [--output file] [--model-key NAME[=VALUE]]...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/base/secrets.env"
keys_out="$here/overlays/models/model-keys.env"
force=0
model_keys=()
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --output) out="${2:?--output needs a file}"; shift ;;
    --model-key) model_keys+=("${2:?--model-key needs NAME or NAME=VALUE}"); shift ;;
    *) echo "gen-secrets.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
umask 077
write_model_keys() {
  local spec name value
  {
    echo "# Model API keys for overlays/models (NAME=key, NAME as the models' apiKeyEnv)."
    echo "# Only coordinators and agent hosts get these. Secrets: keep private, never commit."
    for spec in ${model_keys[@]+"${model_keys[@]}"}; do
      name="${spec%%=*}"
      [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "gen-secrets.sh: --model-key '$name': not a variable name" >&2; return 2; }
      if [ "$spec" = "$name" ]; then
        value="${!name-}"
        [ -n "$value" ] || { echo "gen-secrets.sh: --model-key $name: \$$name is not set in this shell" >&2; return 2; }
      else
        value="${spec#*=}"
      fi
      printf '%s=%s\n' "$name" "$value"
    done
  } >"$keys_out.tmp" && mv "$keys_out.tmp" "$keys_out"
}
if [ -d "$(dirname "$keys_out")" ]; then
  if [ "${#model_keys[@]}" -gt 0 ]; then
    write_model_keys || { rm -f "$keys_out.tmp"; exit 2; }
    echo "[gen-secrets] wrote ${#model_keys[@]} model key(s) to $keys_out"
  elif [ ! -f "$keys_out" ]; then
    write_model_keys
  fi
fi
if [ -f "$out" ] && [ "$force" = 0 ]; then echo "[gen-secrets] $out exists (--force regenerates)"; exit 0; fi
# A letter first: nats-server parses variable values, and `2e68...` would read as a number.
secret() { printf 'tr%s' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
{
  echo "nats-coordinator-password=$(secret)"
  echo "nats-node-agent-password=$(secret)"
  echo "nats-agent-host-password=$(secret)"
  echo "nats-client-password=$(secret)"
  echo "grpc-token=$(secret)"
} >"$out"
echo "[gen-secrets] wrote $out"
