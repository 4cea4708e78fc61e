#!/usr/bin/env bash
# Builds the cluster images offline (no registry is ever contacted):
#   troupe-nats         the build host's nats-server on BASE           (deploy/docker/nats.Dockerfile)
#   troupe-coordinator  `troupe coordinator` (built-in drivers, job API) (deploy/docker/Dockerfile)
#   troupe-node-agent   `troupe node-agent`                             (deploy/docker/Dockerfile)
#   troupe-node-agent-vm   the node agent with QEMU, with --vm             (deploy/docker/Dockerfile)
#   troupe-fake-openai  the testkit's fake model server, with --fake-openai (end-to-end tests)
# plus the sandbox images the node agents start (default: busybox, for shell-tasks), which must
# exist on the Docker engine the node agents use (deploy/images/build.sh).
#
#   deploy/docker/build.sh [--force] [--vm] [--fake-openai] [--base IMAGE] [--sandbox-images "busybox python-slim"]
#   deploy/docker/build.sh --print-tags
#
# BASE defaults to troupe-base (built by deploy/images/build.sh base from debootstrap); with a
# registry, --base node:20-bookworm-slim works too. The build stages the compiled workspaces
# (run `npm run build` first; this script runs `tsc -b` when tsc is available) with their
# production dependencies installed by `npm ci --omit=dev` from the local npm cache, and the
# host's Node.js (>= 20.19) binary. Every image is tagged troupe-<name>:<hash> and :latest, where
# <hash> covers everything that goes into it (Dockerfile, lock file, compiled code, node and
# nats-server binaries, base image id); a build is skipped when the hashed tag exists.
# Progress: `[cluster-images] ...` lines on stdout; errors on stderr, non-zero exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# Bump when this script's staging changes meaning without its inputs changing.
recipe_format=1
workspaces=(proto actors coordinator node-agent agents/llm agents/evolve agents/rsi agents benchmarks client testkit)
# Folders besides dist/ that the servers read at run time.
extras=(proto/troupe benchmarks/suites)

if [ -n "${DOCKER:-}" ]; then docker_bin="$DOCKER"
elif [ -x /usr/bin/docker ]; then docker_bin=/usr/bin/docker
else docker_bin=docker; fi

say() { printf '[cluster-images] %s\n' "$*"; }
die() { printf 'deploy/docker/build.sh: %s\n' "$*" >&2; exit 1; }

force=0
print_tags=0
base=""
sandbox_images="busybox"
vm=0
fake_openai=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --vm) vm=1 ;;
    --fake-openai) fake_openai=1 ;;
    --print-tags) print_tags=1 ;;
    --base) base="${2:?--base needs an image}"; shift ;;
    --sandbox-images) sandbox_images="${2-}"; shift ;;
    -h | --help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

command -v "$docker_bin" >/dev/null 2>&1 || die "no docker client ('$docker_bin') on PATH"
"$docker_bin" version >/dev/null 2>&1 || die "no Docker engine answers (start dockerd first)"
node_bin="$(readlink -f "$(command -v node)")" || die "node (>= 20.19) is needed on the build host"
nats_bin="$(command -v nats-server || true)"
[ -n "$nats_bin" ] || nats_bin=/usr/sbin/nats-server
[ -x "$nats_bin" ] || die "nats-server is needed on the build host (apt-get install nats-server)"
nats_bin="$(readlink -f "$nats_bin")"

start_all=$(date +%s)
if [ -z "$base" ]; then
  "$repo/deploy/images/build.sh" base
  base="troupe-base:$("$repo/deploy/images/build.sh" --print-tag base | cut -d: -f2)"
fi
base_id="$("$docker_bin" image inspect -f '{{.Id}}' "$base" 2>/dev/null)" ||
  die "base image '$base' is not on this engine (build it: deploy/images/build.sh base)"
if [ -n "$sandbox_images" ]; then
  # shellcheck disable=SC2086 # a space-separated list of image names
  "$repo/deploy/images/build.sh" $sandbox_images
fi

if command -v npx >/dev/null 2>&1 && [ -x "$repo/node_modules/.bin/tsc" ]; then
  say "compiling the workspaces (tsc -b)"
  (cd "$repo" && npx tsc -b tsconfig.build.json && bash scripts/copy-dashboard-assets)
fi
for ws in "${workspaces[@]}"; do
  [ -d "$repo/$ws/dist" ] || die "$ws/dist is missing: run 'npm run build' first"
done

sha_of_tree() {
  # sha256 of every file (path and content) under the given paths, in a stable order.
  (cd "$repo" && find "$@" -type f ! -name '*.tsbuildinfo' -print0 | LC_ALL=C sort -z |
    xargs -0 sha256sum) | sha256sum | cut -c1-64
}
app_hash="$(
  {
    printf 'format %s\n' "$recipe_format"
    sha256sum "$here/Dockerfile" "$here/fake-openai-server.js" "$repo/package.json" \
      "$repo/package-lock.json" | cut -c1-64
    for ws in "${workspaces[@]}"; do sha256sum "$repo/$ws/package.json" | cut -c1-64; done
    sha_of_tree "${workspaces[@]/%//dist}" "${extras[@]}"
    printf 'node %s\nbase %s\n' "$("$node_bin" --version)" "$base_id"
    sha256sum "$node_bin" | cut -c1-64
  } | sha256sum | cut -c1-12
)"
nats_hash="$(
  {
    printf 'format %s\nbase %s\n' "$recipe_format" "$base_id"
    sha256sum "$here/nats.Dockerfile" "$here/nats-healthcheck.sh" "$nats_bin" | cut -c1-64
  } | sha256sum | cut -c1-12
)"
if [ "$print_tags" = 1 ]; then
  printf 'troupe-nats:%s\ntroupe-coordinator:%s\ntroupe-node-agent:%s\n' \
    "$nats_hash" "$app_hash" "$app_hash"
  exit 0
fi

exists() { [ "$force" = 0 ] && "$docker_bin" image inspect "$1" >/dev/null 2>&1; }
stage="$(mktemp -d "${TMPDIR:-/tmp}/troupe-cluster-images.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

# --- troupe-nats ---
if exists "troupe-nats:$nats_hash"; then
  say "nats: troupe-nats:$nats_hash is up to date"
else
  t=$(date +%s)
  mkdir -p "$stage/nats"
  cp "$here/nats.Dockerfile" "$stage/nats/Dockerfile"
  cp "$here/nats-healthcheck.sh" "$stage/nats/nats-healthcheck.sh"
  cp "$nats_bin" "$stage/nats/nats-server"
  DOCKER_BUILDKIT=0 "$docker_bin" build -q --force-rm --build-arg "BASE=$base" \
    --label "troupe.recipe-hash=$nats_hash" -t "troupe-nats:$nats_hash" "$stage/nats" >/dev/null
  say "nats: built troupe-nats:$nats_hash in $(($(date +%s) - t)) s"
fi
"$docker_bin" tag "troupe-nats:$nats_hash" troupe-nats:latest

# --- troupe-coordinator, troupe-node-agent ---
targets=(coordinator node-agent)
[ "$vm" = 1 ] && targets+=(node-agent-vm)
[ "$fake_openai" = 1 ] && targets+=(fake-openai)
missing=0
for target in "${targets[@]}"; do exists "troupe-$target:$app_hash" || missing=1; done
if [ "$missing" = 0 ]; then
  say "app: ${targets[*]} :$app_hash are up to date"
else
  t=$(date +%s)
  say "app: staging the workspaces and their production dependencies"
  app="$stage/app/app"
  mkdir -p "$app" "$stage/app/node"
  cp "$repo/package.json" "$repo/package-lock.json" "$app/"
  for ws in "${workspaces[@]}"; do
    mkdir -p "$app/$ws"
    cp "$repo/$ws/package.json" "$app/$ws/"
    cp -r "$repo/$ws/dist" "$app/$ws/dist"
    find "$app/$ws/dist" -name '*.tsbuildinfo' -delete
  done
  for x in "${extras[@]}"; do cp -r "$repo/$x" "$app/$x"; done
  npm_flags=(--omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
  # The local npm cache has every package after the repo's own `npm ci`: no network needed.
  (cd "$app" && npm ci "${npm_flags[@]}" --offline >/dev/null) ||
    { say "app: offline install failed; retrying with --prefer-offline"
      (cd "$app" && npm ci "${npm_flags[@]}" --prefer-offline >/dev/null); }
  cp "$node_bin" "$stage/app/node/node"
  cp "$here/Dockerfile" "$stage/app/Dockerfile"
  cp "$here/fake-openai-server.js" "$stage/app/fake-openai-server.js"
  for target in "${targets[@]}"; do
    # node-agent-vm apt-get installs QEMU from the Debian mirror: host network for the build.
    net=()
    [ "$target" = node-agent-vm ] && net=(--network host)
    DOCKER_BUILDKIT=0 "$docker_bin" build -q --force-rm "${net[@]}" --build-arg "BASE=$base" \
      --target "$target" --label "troupe.recipe-hash=$app_hash" \
      -t "troupe-$target:$app_hash" "$stage/app" >/dev/null
  done
  say "app: built ${targets[*]} :$app_hash in $(($(date +%s) - t)) s"
fi
for target in "${targets[@]}"; do
  "$docker_bin" tag "troupe-$target:$app_hash" "troupe-$target:latest"
done
say "done in $(($(date +%s) - start_all)) s"
