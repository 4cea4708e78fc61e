#!/usr/bin/env bash
# Stops the compose cluster and removes everything it created: `down -v` (containers, network,
# the NATS volume; node agents destroy their sandboxes on SIGTERM), then any sandbox container or
# volume labelled troupe.cluster=troupe that a killed node agent could not destroy.
#   deploy/compose/down.sh [extra docker-compose args, e.g. -p project]
# TROUPE_ENV_FILE names the env file (default deploy/compose/.env).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
compose=(docker-compose)
command -v docker-compose >/dev/null 2>&1 || compose=(docker compose)
docker_bin=docker
[ -x /usr/bin/docker ] && docker_bin=/usr/bin/docker
"${compose[@]}" -f "$here/compose.yaml" --env-file "${TROUPE_ENV_FILE:-$here/.env}" "$@" down -v --remove-orphans
left="$("$docker_bin" ps -aq --filter label=troupe.cluster=troupe)"
if [ -n "$left" ]; then
  echo "[down] removing $(wc -w <<<"$left") sandbox container(s) left by killed node agents"
  # shellcheck disable=SC2086 # ids
  "$docker_bin" rm -f -v $left >/dev/null
fi
vols="$("$docker_bin" volume ls -q --filter label=troupe.cluster=troupe)"
if [ -n "$vols" ]; then
  # shellcheck disable=SC2086 # names
  "$docker_bin" volume rm -f $vols >/dev/null
fi
