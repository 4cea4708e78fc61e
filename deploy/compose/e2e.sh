#!/usr/bin/env bash
# End-to-end test of the compose deployment, one command from a checkout with Docker:
#   1. builds the images offline (deploy/docker/build.sh; cached by content hash),
#   2. brings the cluster up with 2 node agents (own project name, fresh secrets, random port),
#   3. submits a shell-tasks job from the host with the troupe CLI,
#   4. kills one node-agent container (SIGKILL) while it runs sandboxes of the job,
#   5. checks the job SUCCEEDED with every task graded (the killed agent's tasks retried),
#   6. `down -v` (deploy/compose/down.sh) and checks that no container, volume or network of the
#      cluster remains, sandboxes included.
# Prints `[e2e] ...` progress and a timing line; exits non-zero with the reason on failure.
#   deploy/compose/e2e.sh [--keep]      (--keep: leave the cluster up on failure, for debugging)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
keep=0
[ "${1:-}" = --keep ] && keep=1
docker_bin=docker
[ -x /usr/bin/docker ] && docker_bin=/usr/bin/docker
if ! command -v docker-compose >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then
  # Debian 12 has docker-compose 1.29 (no compose v2 plugin); install it like the other services.
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    printf '[e2e] installing docker-compose with apt-get\n'
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null; }
  else
    printf '[e2e] FAILED: docker-compose is needed (as root: apt-get install -y docker-compose)\n' >&2
    exit 1
  fi
fi
compose_bin=(docker-compose)
command -v docker-compose >/dev/null 2>&1 || compose_bin=(docker compose)
say() { printf '[e2e] %s\n' "$*"; }
die() { printf '[e2e] FAILED: %s\n' "$*" >&2; exit 1; }
now_ms() { date +%s%3N; }
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'; }

project="troupe-e2e-$$"
work="$(mktemp -d "${TMPDIR:-/tmp}/troupe-compose-e2e.XXXXXX")"
env_file="$work/.env"
export TROUPE_ENV_FILE="$env_file"
compose() { "${compose_bin[@]}" -p "$project" -f "$here/compose.yaml" --env-file "$env_file" "$@"; }
troupe() { node "$repo/client/dist/cli/main.js" "$@"; }

cleaned=0
cleanup() {
  local rc=$?
  if [ "$cleaned" = 0 ]; then
    if [ "$rc" != 0 ] && [ "$keep" = 1 ]; then
      say "left running (--keep): project $project, env $env_file"
      return
    fi
    if [ "$rc" != 0 ]; then
      compose logs --no-color --tail 30 >"$work/logs.txt" 2>&1 || true
      say "last log lines of the cluster:"; tail -n 60 "$work/logs.txt" | cut -c1-300 || true
    fi
    "$here/down.sh" -p "$project" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$docker_bin" version >/dev/null 2>&1 || die "no Docker engine answers (start dockerd)"

# 1. images
t0=$(now_ms)
"$repo/deploy/docker/build.sh"
build_ms=$(($(now_ms) - t0))

# 2. bring-up: every container healthy, both node agents registered
"$here/gen-env.sh" --output "$env_file" >/dev/null
export TROUPE_GRPC_PUBLISH=127.0.0.1:  # a free host port, read back below
t1=$(now_ms)
compose up -d --scale node-agent=2 >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; die "compose up"; }
deadline=$(($(date +%s) + 180))
ids="$(compose ps -q)"
while :; do
  n=0; healthy=0
  for id in $ids; do
    n=$((n + 1))
    [ "$("$docker_bin" inspect -f '{{.State.Health.Status}}' "$id")" = healthy ] && healthy=$((healthy + 1))
  done
  [ "$n" = 4 ] && [ "$healthy" = 4 ] && { health_ms=$(now_ms); break; }
  [ "$(date +%s)" -lt "$deadline" ] || die "cluster not healthy within 180 s ($healthy/$n healthy)"
  sleep 1
done
port="$(compose port coordinator 50051 | sed 's/.*://')"
set -a; . "$env_file"; set +a
export TROUPE_ADDRESS="127.0.0.1:$port" TROUPE_TOKEN="$TROUPE_GRPC_TOKEN"
mapfile -t agents < <(compose ps -q node-agent)
[ "${#agents[@]}" = 2 ] || die "expected 2 node-agent containers, got ${#agents[@]}"
hosts=(); for id in "${agents[@]}"; do hosts+=("$("$docker_bin" inspect -f '{{.Config.Hostname}}' "$id")"); done
until nodes="$(troupe nodes --json 2>/dev/null)" && grep -q "\"${hosts[0]}\"" <<<"$nodes" &&
  grep -q "\"${hosts[1]}\"" <<<"$nodes"; do
  [ "$(date +%s)" -lt "$deadline" ] || die "node agents ${hosts[*]} not registered within 180 s"
  sleep 1
done
up_ms=$(($(now_ms) - t1))
health_ms=$((health_ms - t1))
say "cluster up: 2 node agents (${hosts[*]}), job API on $TROUPE_ADDRESS"

# 3. a job from the host
tasks=16
{
  echo 'name: compose-e2e'
  echo 'kind: shell-tasks'
  echo 'concurrency: 8'
  echo 'tasks:'
  for i in $(seq 1 "$tasks"); do echo "  - {id: t$i, command: 'sleep 4; echo task $i'}"; done
  echo "  - {id: fails, command: 'exit 3'}"
} >"$work/job.yaml"
tasks=$((tasks + 1))
t2=$(now_ms)
job="$(troupe submit "$work/job.yaml")"
say "submitted $job ($tasks tasks)"
troupe watch "$job" >"$work/watch.log" 2>&1 &
watch_pid=$!

# 4. kill a node agent while it runs sandboxes of the job: once all 4 of its sandbox slots run a
# container of the job (concurrency 8 over 2 agents of 4 slots), so the kill lands in the tasks'
# commands rather than in a sandbox `create` (whose ask waits out the driver's 300 s create
# deadline when its host dies: see docs/deploy.md).
victim="${agents[0]}"; victim_host="${hosts[0]}"
until [ "$("$docker_bin" ps -q --filter status=running --filter "label=troupe.job=$job" \
  --filter "label=troupe.host=$victim_host" --filter label=troupe.role=sandbox | wc -l)" -ge 4 ]; do
  [ "$(date +%s)" -lt "$deadline" ] || die "no sandbox of $job on $victim_host"
  kill -0 "$watch_pid" 2>/dev/null || die "the job ended before a node agent could be killed"
  sleep 0.2
done
"$docker_bin" kill "$victim" >/dev/null
say "killed node agent $victim_host mid-job"

# 5. the job completes with every task graded
wait "$watch_pid" || { cat "$work/watch.log" >&2; die "troupe watch exited non-zero"; }
job_ms=$(($(now_ms) - t2))
grep -E 'retrying|infrastructure' "$work/watch.log" | sed 's/^/[e2e]   watch: /' | cut -c1-200 || true
troupe results "$job" --format json >"$work/results.json"
node - "$work/results.json" "$tasks" <<'JS' || die "job results"
const r = JSON.parse(require('node:fs').readFileSync(process.argv[2], 'utf8'));
const want = Number(process.argv[3]);
const graded = r.tasks.filter((t) => t.status === 'TASK_PASSED' || t.status === 'TASK_FAILED');
const problems = [];
if (r.state !== 'SUCCEEDED') problems.push(`state ${r.state} (${r.reason})`);
if (r.tasks.length !== want) problems.push(`${r.tasks.length} tasks, want ${want}`);
if (graded.length !== want) problems.push(`graded ${graded.length}/${want}`);
const fails = r.tasks.find((t) => t.taskId === 'fails');
if (fails?.status !== 'TASK_FAILED') problems.push(`task fails: ${fails?.status}`);
if (r.tasks.some((t) => t.taskId !== 'fails' && t.status !== 'TASK_PASSED')) problems.push('a sleep task did not pass');
const retried = r.tasks.filter((t) => t.attempts > 1).length;
if (problems.length) { console.error(problems.join('; ')); process.exit(1); }
console.log(`[e2e] job SUCCEEDED: ${graded.length}/${want} graded, ${retried} retried after the kill`);
JS

# 6. down -v leaves nothing
t3=$(now_ms)
"$here/down.sh" -p "$project" >"$work/down.log" 2>&1 || { cat "$work/down.log" >&2; die "down"; }
cleaned=1
down_ms=$(($(now_ms) - t3))
left="$("$docker_bin" ps -aq --filter "label=com.docker.compose.project=$project")"
[ -z "$left" ] || die "containers of $project remain: $left"
left="$("$docker_bin" ps -aq --filter label=troupe.cluster=troupe)"
[ -z "$left" ] || die "sandbox containers remain: $left"
left="$("$docker_bin" volume ls -q --filter "label=com.docker.compose.project=$project"; "$docker_bin" volume ls -q --filter label=troupe.cluster=troupe)"
[ -z "$left" ] || die "volumes remain: $left"
left="$("$docker_bin" network ls -q --filter "label=com.docker.compose.project=$project")"
[ -z "$left" ] || die "networks remain: $left"
say "down -v left no container, volume or network"
say "timing: images $(secs "$build_ms") s, bring-up $(secs "$up_ms") s (all healthy after $(secs "$health_ms") s), job $(secs "$job_ms") s, down $(secs "$down_ms") s"
say "PASSED"
