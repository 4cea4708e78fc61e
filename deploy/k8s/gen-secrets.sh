#!/usr/bin/env bash
# Writes deploy/k8s/base/secrets.env (mode 0600) for the `troupe-secrets` secretGenerator: a
# password per NATS role and the job API token; and deploy/k8s/base/nats-users.conf (mode 0600)
# for the `troupe-nats-users` Secret, the NATS users with those passwords, which only the NATS
# pods mount. Values already in secrets.env are kept unless --force.
#
# Node agents: without --nodes they share one user `node-agent` (its password in secrets.env).
# --nodes NAME[,NAME...] gives each Kubernetes node its own user `node-agent.<NAME>`, allowed
# only that node's host control subjects (and no shared user is written), and writes each
# node's password to node-credentials/<NAME>/nats-password: install it on that node as
# /etc/troupe/node-agent/nats-password (mode 0400, root) and deploy with the
# components/per-node-nats component (docs/deploy.md, "Per-node NATS users on Kubernetes").
# Nodes whose credentials are already there stay (their passwords too, unless --force): adding
# a node is `--nodes <new node>`; removing one, deleting its directory and running this again.
#
# Also writes overlays/models/model-keys.env (mode 0600) for the `troupe-model-keys` Secret of
# overlays/models: the model API keys, NAME=key for the variables the models file names
# (apiKeyEnv), which only the coordinators and agent hosts get. --model-key NAME takes $NAME from
# this shell's environment (keeps it out of your shell history), --model-key NAME=VALUE the given
# value; given --model-key the file is rewritten, otherwise an empty one is written when missing.
#   deploy/k8s/gen-secrets.sh [--force] [--output file] [--nodes NAME[,NAME...]]
#                             [--node-credentials dir] [--model-key NAME[=VALUE]]...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/base/secrets.env"
keys_out="$here/overlays/models/model-keys.env"
creds_dir="$here/node-credentials"
force=0
model_keys=()
nodes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --output) out="${2:?--output needs a file}"; shift ;;
    --model-key) model_keys+=("${2:?--model-key needs NAME or NAME=VALUE}"); shift ;;
    --nodes) IFS=', ' read -r -a more <<<"${2:?--nodes needs node names}"; nodes+=("${more[@]}"); shift ;;
    --node-credentials) creds_dir="${2:?--node-credentials needs a directory}"; shift ;;
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
users_out="$(dirname "$out")/nats-users.conf"

# Kubernetes node names are DNS subdomains (RFC 1123): nothing else reaches the users file.
node_re='^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'
for n in ${nodes[@]+"${nodes[@]}"}; do
  if ! [[ "$n" =~ $node_re ]] || [ "${#n}" -gt 253 ]; then
    echo "gen-secrets.sh: --nodes '$n': not a Kubernetes node name (lower-case letters, digits, '-' and '.')" >&2
    exit 2
  fi
done
if [ -d "$creds_dir" ]; then
  for d in "$creds_dir"/*/; do
    [ -f "$d/nats-password" ] && nodes+=("$(basename "$d")")
  done
fi
if [ "${#nodes[@]}" -gt 0 ]; then
  mapfile -t nodes < <(printf '%s\n' "${nodes[@]}" | sort -u)
fi

# The node agent's host id of a node name (node-agent/src/config.ts hostIdOf): each run of
# characters outside [A-Za-z0-9_-] becomes '-', no '-' at either end, at most 64 characters.
host_id_of() {
  local id
  id="$(printf '%s' "$1" | sed -E 's/[^A-Za-z0-9_-]+/-/g; s/^-+//; s/-+$//')"
  id="${id:0:64}"
  id="$(printf '%s' "$id" | sed -E 's/-+$//')"
  printf '%s' "${id:-node}"
}

# A letter first: nats-server parses variable values, and `2e68...` would read as a number.
secret() { printf 'tr%s' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
# The value of `key` in the existing secrets.env (kept unless --force), or a new secret.
kept() {
  local v=""
  if [ "$force" = 0 ] && [ -f "$out" ]; then v="$(sed -n "s/^$1=//p" "$out" | head -n 1)"; fi
  printf '%s' "${v:-$(secret)}"
}
coordinator_pw="$(kept nats-coordinator-password)"
agent_host_pw="$(kept nats-agent-host-password)"
client_pw="$(kept nats-client-password)"
grpc_token="$(kept grpc-token)"
shared_pw=""
[ "${#nodes[@]}" -gt 0 ] || shared_pw="$(kept nats-node-agent-password)"
{
  echo "nats-coordinator-password=$coordinator_pw"
  [ -z "$shared_pw" ] || echo "nats-node-agent-password=$shared_pw"
  echo "nats-agent-host-password=$agent_host_pw"
  echo "nats-client-password=$client_pw"
  echo "grpc-token=$grpc_token"
} >"$out.tmp" && mv "$out.tmp" "$out"

{
  # No date: the same users make the same Secret (its name's hash), so running this again does
  # not restart the NATS servers.
  echo "# Generated by deploy/k8s/gen-secrets.sh: the NATS users of nats-roles.conf's roles, with"
  echo "# their passwords. Secret: keep private, never commit."
  echo "include ../config/nats-roles.conf"
  if [ -n "$shared_pw" ]; then
    echo "# ONE user shared by every node agent (gen-secrets.sh --nodes gives each node its own): the"
    echo "# node agents' allow list, but any host's control subjects (a compromised agent could answer"
    echo "# for another host)."
    echo "NODE_AGENT_SHARED = {"
    echo '  publish: { allow: $NODE_AGENT_PUBLISH }'
    echo '  subscribe: { allow: ["troupe.troupe.host.*.*", "troupe.troupe.actor.sandbox.>", "troupe.troupe.actor.evaluator.>", "troupe.troupe.actor.environment.>", "_INBOX.>"] }'
    echo "}"
  fi
  echo "users = ["
  echo "  { user: coordinator, password: \"$coordinator_pw\", permissions: \$COORDINATOR }"
  echo "  { user: agent-host, password: \"$agent_host_pw\", permissions: \$AGENT_HOST }"
  echo "  { user: client, password: \"$client_pw\", permissions: \$CLIENT }"
  [ -z "$shared_pw" ] || echo "  { user: node-agent, password: \"$shared_pw\", permissions: \$NODE_AGENT_SHARED }"
  for n in ${nodes[@]+"${nodes[@]}"}; do
    f="$creds_dir/$n/nats-password"
    pw=""
    if [ "$force" = 0 ] && [ -f "$f" ]; then pw="$(head -n 1 "$f")"; fi
    if [ -z "$pw" ]; then
      pw="$(secret)"
      mkdir -p "$creds_dir/$n"
      printf '%s\n' "$pw" >"$f.tmp" && mv "$f.tmp" "$f"
    fi
    id="$(host_id_of "$n")"
    echo "  { user: \"node-agent.$n\", password: \"$pw\", permissions: {"
    echo '      publish: { allow: $NODE_AGENT_PUBLISH }'
    echo "      subscribe: { allow: [\"troupe.troupe.host.$id.*\", \"troupe.troupe.actor.sandbox.>\", \"troupe.troupe.actor.evaluator.>\", \"troupe.troupe.actor.environment.>\", \"_INBOX.>\"] }"
    echo "  } }"
  done
  echo "]"
} >"$users_out.tmp" && mv "$users_out.tmp" "$users_out"
if [ "${#nodes[@]}" -gt 0 ]; then
  echo "[gen-secrets] wrote $out and $users_out: ${#nodes[@]} node(s) with their own NATS user; install"
  echo "[gen-secrets] each $creds_dir/<node>/nats-password on its node as /etc/troupe/node-agent/nats-password"
  echo "[gen-secrets] and deploy with components/per-node-nats"
else
  echo "[gen-secrets] wrote $out and $users_out (node agents share one NATS user)"
fi
