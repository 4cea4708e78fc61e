#!/usr/bin/env bash
# Stops the compose cluster and removes everything it created: `down -v` (containers, network,
# the NATS volume; node agents destroy their sandboxes on SIGTERM), then any sandbox container or
# volume that a killed node agent of this project could not destroy: the node agents' host ids
# (TROUPE_NODE_AGENT_<k>_ID in the env file, also their container hostnames) are read before
# `down`, and whatever is labelled troupe.cluster=troupe with one of those troupe.host values is
# removed. The node agents of compose.node-agents.yaml go with --remove-orphans.
#   deploy/compose/down.sh [extra docker-compose args, e.g. -p project]
# TROUPE_ENV_FILE names the env file (default deploy/compose/.env).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
compose=(docker-compose)
command -v docker-compose >/dev/null 2>&1 || compose=(docker compose)
docker_bin=docker
[ -x /usr/bin/docker ] && docker_bin=/usr/bin/docker
env_file="${TROUPE_ENV_FILE:-$here/.env}"
files=(-f "$here/compose.yaml")
# The generated node agent services (gen-env.sh writes them beside the env file), so `down` stops
# them with their grace period.
agents_file="$(dirname "$env_file")/compose.node-agents.yaml"
[ -f "$agents_file" ] && files+=(-f "$agents_file")
run_compose() { "${compose[@]}" "${files[@]}" --env-file "$env_file" "$@"; }

hosts=()
if [ -f "$env_file" ]; then
  mapfile -t hosts < <(sed -n 's/^TROUPE_NODE_AGENT_[0-9]*_ID=//p' "$env_file")
fi
run_compose "$@" down -v --remove-orphans
for h in "${hosts[@]}"; do
  [ -n "$h" ] || continue
  filters=(--filter label=troupe.cluster=troupe --filter "label=troupe.host=$h")
  left="$("$docker_bin" ps -aq "${filters[@]}")"
  if [ -n "$left" ]; then
    echo "[down] removing $(wc -w <<<"$left") sandbox container(s) node agent $h left behind"
    # shellcheck disable=SC2086 # ids
    "$docker_bin" rm -f -v $left >/dev/null
  fi
  vols="$("$docker_bin" volume ls -q "${filters[@]}")"
  # shellcheck disable=SC2086 # names
  if [ -n "$vols" ]; then "$docker_bin" volume rm -f $vols >/dev/null; fi
done
