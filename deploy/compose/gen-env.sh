#!/usr/bin/env bash
# Writes deploy/compose/.env (mode 0600) for compose.yaml: a password per NATS user, the job API
# bearer token, the group id of the Docker socket (given to node agents with group_add) and, where
# the host has /dev/kvm, its group id (--kvm).
# Beside it, for --node-agents N (default 2) node agents, each with its own NATS user:
#   nats-users.conf          the NATS users (included by nats.conf): coordinator, client,
#                            agent-host, and node-agent-<k>-<random> for k = 1..N, each allowed
#                            only its own host control subjects (no secrets: passwords are $VARs)
#   compose.node-agents.yaml the services node-agent-1..N (host id = hostname = NATS user); add it
#                            with -f to every docker-compose command. --vm: the `vm` environment
#                            kind (troupe-node-agent-vm image, guest images, a state volume per
#                            agent); --kvm (with --vm, where /dev/kvm exists): the device and
#                            its group, for hardware acceleration (these replace the former
#                            compose.vm.yaml and compose.kvm.yaml overlays).
# Adding a node agent = `--force --node-agents N+1` and `up -d` (new secrets for every user).
# Keeps existing files unless --force (new secrets invalidate a running cluster's clients); an
# .env without the users files (from before per-agent users) is regenerated.
#   deploy/compose/gen-env.sh [--force] [--output file] [--docker-socket /var/run/docker.sock]
#                             [--node-agents N] [--vm [--kvm]] [--model-key NAME[=VALUE]]...
# Model API keys (compose.models.yaml) go to a second file, models.env beside the .env (mode
# 0600), which only the coordinator and the agent hosts receive (env_file), never node agents or
# sandboxes: --model-key NAME takes $NAME from this shell's environment (keeps the key out of
# your shell history), --model-key NAME=VALUE the given value; NAME is what the models file's
# apiKeyEnv says (e.g. OPENAI_API_KEY). Given --model-key, models.env is rewritten (the .env is
# kept unless --force); otherwise an empty models.env is written when there is none.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
env_file="$here/.env"
force=0
socket=/var/run/docker.sock
model_keys=()
node_agents=2
vm=0
kvm=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --output) env_file="${2:?--output needs a file}"; shift ;;
    --docker-socket) socket="${2:?--docker-socket needs a path}"; shift ;;
    --vm) vm=1 ;;
    --kvm) kvm=1 ;;
    --node-agents) node_agents="${2:?--node-agents needs a number}"; shift ;;
    --model-key) model_keys+=("${2:?--model-key needs NAME or NAME=VALUE}"); shift ;;
    *) echo "gen-env.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ "$node_agents" =~ ^[1-9][0-9]?$ ]] || { echo "gen-env.sh: --node-agents must be 1 to 99" >&2; exit 2; }
[ "$kvm" = 0 ] || [ "$vm" = 1 ] || { echo "gen-env.sh: --kvm needs --vm" >&2; exit 2; }
[ "$kvm" = 0 ] || [ -c /dev/kvm ] || { echo "gen-env.sh: --kvm: no /dev/kvm on this host" >&2; exit 2; }
out_dir="$(cd "$(dirname "$env_file")" && pwd)"
keys_file="$out_dir/models.env"
users_file="$out_dir/nats-users.conf"
agents_file="$out_dir/compose.node-agents.yaml"
umask 077
write_model_keys() {
  local spec name value
  {
    echo "# Model API keys for compose.models.yaml (NAME=key, NAME as the models' apiKeyEnv)."
    echo "# Only the coordinator and agent hosts get these. Secrets: keep private, never commit."
    for spec in ${model_keys[@]+"${model_keys[@]}"}; do
      name="${spec%%=*}"
      [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "gen-env.sh: --model-key '$name': not a variable name" >&2; return 2; }
      if [ "$spec" = "$name" ]; then
        value="${!name-}"
        [ -n "$value" ] || { echo "gen-env.sh: --model-key $name: \$$name is not set in this shell" >&2; return 2; }
      else
        value="${spec#*=}"
      fi
      [[ "$value" != *$'\n'* ]] || { echo "gen-env.sh: --model-key $name: the key has a newline" >&2; return 2; }
      printf '%s=%s\n' "$name" "$value"
    done
  } >"$keys_file.tmp" && mv "$keys_file.tmp" "$keys_file"
}
if [ "${#model_keys[@]}" -gt 0 ]; then
  write_model_keys || { rm -f "$keys_file.tmp"; exit 2; }
  echo "[gen-env] wrote ${#model_keys[@]} model key(s) to $keys_file"
elif [ ! -f "$keys_file" ]; then
  write_model_keys
fi
if [ -f "$env_file" ] && [ -f "$users_file" ] && [ -f "$agents_file" ] && [ "$force" = 0 ]; then
  echo "[gen-env] $env_file exists (use --force to regenerate)"
  exit 0
fi
[ -S "$socket" ] || { echo "gen-env.sh: no Docker socket at $socket" >&2; exit 1; }
# A letter first: nats-server parses a variable's value, and `2e68...` would read as a number.
secret() { printf 'tr%s' "$(head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
# Node agent k's host id and NATS user: a random suffix keeps two clusters on one Docker engine
# from sharing host ids (each agent's reaper removes what is labelled with its host id).
suffix="$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')"
agent_id() { printf 'node-agent-%s-%s' "$1" "$suffix"; }
{
  echo "# Generated by deploy/compose/gen-env.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ). Secrets: keep private."
  echo "TROUPE_NATS_COORDINATOR_PASSWORD=$(secret 24)"
  echo "TROUPE_NATS_AGENT_HOST_PASSWORD=$(secret 24)"
  echo "TROUPE_NATS_CLIENT_PASSWORD=$(secret 24)"
  for k in $(seq 1 "$node_agents"); do
    echo "TROUPE_NODE_AGENT_${k}_ID=$(agent_id "$k")"
    echo "TROUPE_NATS_NODE_AGENT_${k}_PASSWORD=$(secret 24)"
  done
  echo "TROUPE_NODE_AGENTS=$node_agents"
  echo "TROUPE_NATS_USERS_FILE=$users_file"
  echo "TROUPE_GRPC_TOKEN=$(secret 24)"
  echo "TROUPE_DOCKER_GID=$(stat -c %g "$socket")"
  echo "# compose.models.yaml: the model keys' env file, and the models file (default ./models.yaml)."
  echo "TROUPE_MODEL_KEYS_FILE=$keys_file"
} >"$env_file"
# --kvm gives node agents /dev/kvm and its group.
if [ -c /dev/kvm ]; then echo "TROUPE_KVM_GID=$(stat -c %g /dev/kvm)" >>"$env_file"; fi

# The NATS users (no secrets: nats-server reads the passwords from its environment). A node
# agent's subscriptions are its own host's control subjects, the kinds it hosts and replies;
# what it may publish is nats.conf's NODE_AGENT_PUBLISH.
{
  echo "# Generated by deploy/compose/gen-env.sh: the NATS users of nats.conf's roles."
  echo "include ./nats-roles.conf"
  echo "users = ["
  echo '  { user: coordinator, password: $TROUPE_NATS_COORDINATOR_PASSWORD, permissions: $COORDINATOR }'
  echo '  { user: agent-host, password: $TROUPE_NATS_AGENT_HOST_PASSWORD, permissions: $AGENT_HOST }'
  echo '  { user: client, password: $TROUPE_NATS_CLIENT_PASSWORD, permissions: $CLIENT }'
  for k in $(seq 1 "$node_agents"); do
    id="$(agent_id "$k")"
    echo "  { user: $id, password: \$TROUPE_NATS_NODE_AGENT_${k}_PASSWORD, permissions: {"
    echo '      publish: { allow: $NODE_AGENT_PUBLISH }'
    echo "      subscribe: { allow: [\"troupe.troupe.host.$id.*\", \"troupe.troupe.actor.sandbox.>\", \"troupe.troupe.actor.evaluator.>\", \"troupe.troupe.actor.environment.>\", \"_INBOX.>\"] }"
    echo "  } }"
  done
  echo "]"
} >"$users_file"
chmod 0644 "$users_file" # read by the NATS container's user; it holds no secret

# The node agent services, one per user (compose's --scale cannot give replicas their own
# credentials). Each one's host id is its hostname and its NATS user.
{
  echo "# Generated by deploy/compose/gen-env.sh: $node_agents node agents, each with its own NATS user."
  echo "# Add to every docker-compose command: -f $agents_file"
  echo "services:"
  echo "  nats:"
  echo "    environment:"
  for k in $(seq 1 "$node_agents"); do
    echo "      TROUPE_NATS_NODE_AGENT_${k}_PASSWORD: \${TROUPE_NATS_NODE_AGENT_${k}_PASSWORD:?run deploy/compose/gen-env.sh}"
  done
  image=troupe-node-agent:latest
  [ "$vm" = 0 ] || image=troupe-node-agent-vm:latest
  for k in $(seq 1 "$node_agents"); do
    id="$(agent_id "$k")"
    cat <<YAML
  node-agent-$k:
    image: $image
    init: true
    restart: unless-stopped
    depends_on:
      nats:
        condition: service_healthy
    # Host id = hostname = NATS user: the user's permissions cover this host's subjects only, so
    # the agent cannot run under another host id (and a restarted container reaps its own).
    hostname: $id
    labels:
      troupe.node-agent: '$k'
    healthcheck:
      test: ['CMD', 'test', '-f', '/tmp/troupe.ready']
      interval: 3s
      timeout: 3s
      retries: 10
      start_period: 30s
    # Running sandbox work gets 30 s (shutdownGraceMs) to finish; then every sandbox is destroyed.
    stop_grace_period: 45s
    environment:
      TROUPE_CLUSTER: troupe
      TROUPE_HOST_ID: $id
      TROUPE_NATS_URL: nats://nats:4222
      TROUPE_NATS_USER: $id
      TROUPE_NATS_PASS: \${TROUPE_NATS_NODE_AGENT_${k}_PASSWORD:?run deploy/compose/gen-env.sh}
      TROUPE_BACKEND: docker
      TROUPE_SLOTS: \${TROUPE_NODE_SLOTS:-sandbox=4,evaluator=2}
      TROUPE_LOG_LEVEL: \${TROUPE_LOG_LEVEL:-info}
YAML
    if [ "$vm" = 1 ]; then
      # The vm environment kind: QEMU in the agent's container (uid 1000), guests without network,
      # about 1.2 GiB each; guest images built on the host by deploy/images/build-vm.sh.
      echo "      TROUPE_VM: 'on'"
      echo "      TROUPE_VM_IMAGE_DIR: /var/lib/troupe/vm-images"
      echo "      TROUPE_VM_STATE_DIR: /var/lib/troupe/vms"
    fi
    # Trust boundary: the Docker socket (compose.yaml's header). The agent runs as uid 1000 and
    # reaches the socket through its group, never as root in the container.
    echo "    group_add:"
    echo "      - '\${TROUPE_DOCKER_GID:?run deploy/compose/gen-env.sh}'"
    if [ "$kvm" = 1 ]; then
      # /dev/kvm and its group; the agent still probes KVM and falls back to TCG when a probe
      # guest does not boot (docs/deploy.md, "Desktop VMs").
      echo "      - '\${TROUPE_KVM_GID:?no /dev/kvm group id: run deploy/compose/gen-env.sh --force}'"
      echo "    devices:"
      echo "      - /dev/kvm:/dev/kvm"
    fi
    echo "    volumes:"
    echo "      - /var/run/docker.sock:/var/run/docker.sock"
    if [ "$vm" = 1 ]; then
      # Guest images read-only; overlays, sockets and the reaper's records per agent.
      echo "      - \${TROUPE_VM_IMAGE_DIR:-/var/lib/troupe/vm-images}:/var/lib/troupe/vm-images:ro"
      echo "      - vm-state-$k:/var/lib/troupe/vms"
    fi
  done
  if [ "$vm" = 1 ]; then
    echo "volumes:"
    for k in $(seq 1 "$node_agents"); do echo "  vm-state-$k:"; done
  fi
} >"$agents_file"
chmod 0644 "$agents_file"
echo "[gen-env] wrote $env_file, $users_file and $agents_file ($node_agents node agents)"
