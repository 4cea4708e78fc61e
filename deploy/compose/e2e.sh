#!/usr/bin/env bash
# End-to-end test of the compose deployment, one command from a checkout with Docker:
#   1. builds the images offline (deploy/docker/build.sh --fake-openai; cached by content hash),
#   2. brings the cluster up with 2 node agents (each its own NATS user), the models overlay (compose.models.yaml: models
#      file and key for the coordinator, an agent host) and a FakeOpenAI container (own project
#      name, fresh secrets, random port),
#   3. submits a shell-tasks job from the host with the troupe CLI,
#   4. kills one node-agent container (SIGKILL) while it runs sandboxes of the job,
#   5. checks the job SUCCEEDED with every task graded (the killed agent's tasks retried),
#   6. restarts that agent, submits a model-agent issue-resolution job and an evolve job with LLM
#      operators (both on the fake model), kills a node agent while it holds a sandbox of the
#      issue job, checks both jobs complete with every task graded once, that the model calls
#      reached the fake server with the key, and that no node agent or sandbox had the key,
#   7. `down -v` (deploy/compose/down.sh) and checks that no container, volume or network of the
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
e2e_files="$work/e2e"   # suites, models file, fake script: read by uid 1000 in the containers
compose() {
  "${compose_bin[@]}" -p "$project" -f "$here/compose.yaml" -f "$work/compose.node-agents.yaml" \
    -f "$here/compose.models.yaml" -f "$e2e_files/compose.e2e.yaml" --env-file "$env_file" "$@"
}
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
"$repo/deploy/docker/build.sh" --fake-openai --sandbox-images "busybox python-slim"
build_ms=$(($(now_ms) - t0))

# 2. bring-up: every container healthy, both node agents registered
model_key="sk-e2e-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
TROUPE_E2E_MODEL_KEY="$model_key" "$here/gen-env.sh" --output "$env_file" --node-agents 2 \
  --model-key TROUPE_E2E_MODEL_KEY >/dev/null
write_e2e_files() {
  mkdir -p "$e2e_files/suites/issues"
  # Four copies of bugfix-mini's sh-log-rotate (the task that runs on troupe-base).
  for i in 1 2 3 4; do
    cp -r "$repo/benchmarks/suites/bugfix-mini/sh-log-rotate" "$e2e_files/suites/issues/rotate-$i"
    sed -i "s/^id: sh-log-rotate$/id: rotate-$i/" "$e2e_files/suites/issues/rotate-$i/task.yaml"
  done
  cp -r "$repo/benchmarks/test/integration/evolve-fixtures/quick-suite" "$e2e_files/suites/quick"
  cat >"$e2e_files/models.yaml" <<'YAML'
models:
  fake:
    baseURL: http://fake-openai:8080/v1
    apiKeyEnv: TROUPE_E2E_MODEL_KEY
    model: fake-model
    inputUsdPer1M: 1
    outputUsdPer1M: 10
    maxTokens: 1000
YAML
  # The fake model's script: the issue solver writes the fixed rotate.sh (the reference patch
  # applied), then finishes, each reply 2 s late so sessions are in flight when an agent dies;
  # every other request (evolve's LLM operators) gets a program for the quick suite.
  node - "$repo" "$e2e_files/fake-script.json" <<'JS'
const [repo, out] = process.argv.slice(2);
const fs = require('node:fs');
const { parsePatch, applyFilePatch } = require(`${repo}/benchmarks/dist/index.js`);
const task = `${repo}/benchmarks/suites/bugfix-mini/sh-log-rotate`;
const writes = parsePatch(fs.readFileSync(`${task}/solution.patch`, 'utf8')).map((p) => ({
  name: 'write_file',
  arguments: {
    path: p.newPath,
    content: applyFilePatch(fs.readFileSync(`${task}/repo/${p.oldPath}`, 'utf8'), p),
  },
}));
const usage = { prompt_tokens: 1000, completion_tokens: 100 };
const program = (x, y) => `Here:\n\n\`\`\`python\nX = ${x}\nY = ${y}\nprint(X, Y)\n\`\`\`\n`;
fs.writeFileSync(out, JSON.stringify({
  rules: [
    { name: 'issue', match: 'fixing an issue in a repository', steps: [
      { toolCalls: writes, usage, delayMs: 2000 },
      { toolCalls: [{ name: 'finish_task', arguments: { summary: 'fixed' } }], usage, delayMs: 2000 },
    ] },
    { name: 'evolve', match: '.', steps: [{ content: program(0.3, 0.69), usage }] },
  ],
}));
JS
  cat >"$e2e_files/compose.e2e.yaml" <<YAML
# Test-only additions (deploy/compose/e2e.sh): the fake model server and the test suites.
services:
  fake-openai:
    image: troupe-fake-openai:latest
    init: true
    environment:
      FAKE_OPENAI_SCRIPT: /e2e/fake-script.json
      FAKE_OPENAI_API_KEY: \${TROUPE_E2E_MODEL_KEY_FOR_FAKE:?}
    volumes:
      - $e2e_files:/e2e:ro
  coordinator:
    volumes:
      - $e2e_files/suites:/e2e/suites:ro
YAML
  chmod -R a+rX "$e2e_files"
  chmod a+x "$work"
}
write_e2e_files
# The fake server checks the key; it is not one of the cluster's services, so it gets it here.
export TROUPE_E2E_MODEL_KEY_FOR_FAKE="$model_key"
echo "TROUPE_MODELS_FILE=$e2e_files/models.yaml" >>"$env_file"
export TROUPE_GRPC_PUBLISH=127.0.0.1:  # a free host port, read back below
t1=$(now_ms)
compose up -d >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; die "compose up"; }
deadline=$(($(date +%s) + 180))
ids="$(compose ps -q)"
while :; do
  n=0; healthy=0
  for id in $ids; do
    n=$((n + 1))
    [ "$("$docker_bin" inspect -f '{{.State.Health.Status}}' "$id")" = healthy ] && healthy=$((healthy + 1))
  done
  [ "$n" = 6 ] && [ "$healthy" = 6 ] && { health_ms=$(now_ms); break; }
  [ "$(date +%s)" -lt "$deadline" ] || die "cluster not healthy within 180 s ($healthy/$n healthy)"
  sleep 1
done
port="$(compose port coordinator 50051 | sed 's/.*://')"
set -a; . "$env_file"; set +a
export TROUPE_ADDRESS="127.0.0.1:$port" TROUPE_TOKEN="$TROUPE_GRPC_TOKEN"
mapfile -t agents < <(compose ps -q node-agent-1; compose ps -q node-agent-2)
[ "${#agents[@]}" = 2 ] || die "expected 2 node-agent containers, got ${#agents[@]}"
hosts=(); for id in "${agents[@]}"; do hosts+=("$("$docker_bin" inspect -f '{{.Config.Hostname}}' "$id")"); done
until nodes="$(troupe nodes --json 2>/dev/null)" && grep -q "\"${hosts[0]}\"" <<<"$nodes" &&
  grep -q "\"${hosts[1]}\"" <<<"$nodes"; do
  [ "$(date +%s)" -lt "$deadline" ] || die "node agents ${hosts[*]} not registered within 180 s"
  sleep 1
done
agent_host_id="$("$docker_bin" inspect -f '{{.Config.Hostname}}' "$(compose ps -q agent-host)")"
until nodes="$(troupe nodes --json 2>/dev/null)" && grep -q "\"agents-$agent_host_id\"" <<<"$nodes"; do
  [ "$(date +%s)" -lt "$deadline" ] || die "agent host agents-$agent_host_id not registered within 180 s"
  sleep 1
done
up_ms=$(($(now_ms) - t1))
health_ms=$((health_ms - t1))
say "cluster up: 2 node agents (${hosts[*]}), agent host agents-$agent_host_id, FakeOpenAI, job API on $TROUPE_ADDRESS"

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

# 6. model agents and LLM operators, a node agent killed mid-job
t4=$(now_ms)
"$docker_bin" start "$victim" >/dev/null
deadline=$(($(date +%s) + 120))
# Healthy = its ready file exists = registered again (it reaped what its killed process left).
until [ "$("$docker_bin" inspect -f '{{.State.Health.Status}}' "$victim")" = healthy ]; do
  [ "$(date +%s)" -lt "$deadline" ] || die "restarted node agent $victim_host not back within 120 s"
  sleep 1
done
cat >"$work/issues.yaml" <<'YAML'
name: compose-e2e-model-agents
kind: issue-resolution
concurrency: 4
budget: { usd: 5 }
taskTimeoutMs: 300000
retries: { max: 3, backoffMs: 500, maxBackoffMs: 2000 }
agent: { model: fake, maxSteps: 6 }
# The images exist: a sandbox request lost with a dead host fails after 30 s, not 5 min.
config: { agent: { kind: model }, createTimeoutMs: 30000 }
tasks: { suite: /e2e/suites/issues }
YAML
cat >"$work/evolve.yaml" <<'YAML'
name: compose-e2e-evolve
kind: evolve
concurrency: 1
taskTimeoutMs: 400000
agent: { model: fake, maxTokens: 512 }
config: { evaluatorSlots: 2 }
tasks:
  - id: quick
    suite: /e2e/suites/quick
    limits: { maxEvaluations: 12 }
    search: { seed: 2 }
YAML
issue_job="$(troupe submit "$work/issues.yaml")"
evolve_job="$(troupe submit "$work/evolve.yaml")"
say "submitted $issue_job (4 model-agent issue tasks) and $evolve_job (evolve, LLM operators)"
troupe watch "$issue_job" >"$work/watch-issues.log" 2>&1 &
watch_issues=$!
troupe watch "$evolve_job" >"$work/watch-evolve.log" 2>&1 &
watch_evolve=$!
deadline=$(($(date +%s) + 180))
# Kill the node agent holding a sandbox of the issue job once a model reply is on its way to an
# agent session (the fake logged one), so the kill lands in running model-agent work.
fake_id="$(compose ps -q fake-openai)"
victim=""
while [ -z "$victim" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || die "no sandbox of $issue_job with a model call under way"
  kill -0 "$watch_issues" 2>/dev/null || die "the issue job ended before a node agent could be killed"
  # (grep without -q reads to the end: `grep -q` exiting at the first match would SIGPIPE the
  # writer, and under pipefail the match would read as a failure.)
  if "$docker_bin" logs "$fake_id" 2>/dev/null | grep '"rule":"issue"' >/dev/null; then
    for i in 0 1; do
      if [ -n "$("$docker_bin" ps -q --filter status=running --filter "label=troupe.job=$issue_job" \
        --filter "label=troupe.host=${hosts[$i]}" --filter label=troupe.role=sandbox)" ]; then
        victim="${agents[$i]}"; victim_host="${hosts[$i]}"; break
      fi
    done
  fi
  [ -n "$victim" ] || sleep 0.2
done
# No key in a node agent's or a sandbox's environment (the sandboxes of both jobs running now).
for id in "${agents[@]}" $("$docker_bin" ps -q --filter label=troupe.cluster=troupe); do
  # (A sandbox may be gone by the time it is inspected: that is no finding.)
  if "$docker_bin" inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$id" 2>/dev/null | grep "$model_key" >/dev/null; then
    die "container $id has the model key in its environment"
  fi
done
held="$("$docker_bin" ps -q --filter "label=troupe.host=$victim_host" --filter label=troupe.cluster=troupe | wc -l)"
"$docker_bin" kill "$victim" >/dev/null
say "killed node agent $victim_host mid-job (it held $held sandbox(es), one of $issue_job at least)"
wait "$watch_issues" || { cat "$work/watch-issues.log" >&2; die "troupe watch $issue_job exited non-zero"; }
wait "$watch_evolve" || { cat "$work/watch-evolve.log" >&2; die "troupe watch $evolve_job exited non-zero"; }
models_ms=$(($(now_ms) - t4))
troupe results "$issue_job" --format json >"$work/issues.json"
troupe results "$evolve_job" --format json >"$work/evolve.json"
"$docker_bin" logs "$fake_id" >"$work/fake.log" 2>&1
node - "$work/issues.json" "$work/evolve.json" "$work/fake.log" <<'JS' || die "model job results"
const fs = require('node:fs');
const [issuesFile, evolveFile, fakeLog] = process.argv.slice(2);
const issues = JSON.parse(fs.readFileSync(issuesFile, 'utf8'));
const evolve = JSON.parse(fs.readFileSync(evolveFile, 'utf8'));
const log = fs.readFileSync(fakeLog, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
const problems = [];
const graded = (t) => t.status === 'TASK_PASSED' || t.status === 'TASK_FAILED';
// Issue job: the 4 tasks, each graded once, each solved by the scripted model agent.
if (issues.state !== 'SUCCEEDED') problems.push(`issue job ${issues.state} (${issues.reason})`);
const ids = issues.tasks.map((t) => t.taskId).sort();
if (JSON.stringify(ids) !== JSON.stringify(['rotate-1', 'rotate-2', 'rotate-3', 'rotate-4'])) problems.push(`issue tasks ${ids}`);
for (const t of issues.tasks) {
  if (t.status !== 'TASK_PASSED') problems.push(`${t.taskId}: ${t.status} after ${t.attempts} attempt(s): ${t.error ?? ''}`);
  if (!(t.costUsd > 0)) problems.push(`${t.taskId}: no model cost charged`);
}
// Evolve job: its one task graded once, the search finished, its operators called the model.
if (evolve.state !== 'SUCCEEDED') problems.push(`evolve job ${evolve.state} (${evolve.reason})`);
if (evolve.tasks.length !== 1 || !evolve.tasks.every(graded)) problems.push(`evolve tasks ${JSON.stringify(evolve.tasks.map((t) => [t.taskId, t.status]))}`);
const d = evolve.tasks[0]?.details ?? {};
if (d.status !== 'succeeded' || typeof d.testScore !== 'number') problems.push(`evolve details ${JSON.stringify(d)}`);
if (!(evolve.tasks[0]?.costUsd > 0)) problems.push('evolve: no model cost charged');
// The fake's log: every chat request carried the key (answered, none refused or unscripted).
const chats = log.filter((l) => l.fake === 'request' && l.path === '/v1/chat/completions').length;
const replies = log.filter((l) => l.fake === 'reply');
const byRule = (r) => replies.filter((l) => l.rule === r).length;
const unexpected = log.filter((l) => l.fake === 'unexpected' || l.fake === 'error');
if (chats === 0 || replies.length !== chats) problems.push(`${chats} chat requests, ${replies.length} answered`);
if (byRule('issue') < 8) problems.push(`${byRule('issue')} issue-agent calls, want >= 8 (2 per task)`);
if (byRule('evolve') < 1) problems.push('no evolve operator call reached the fake model');
if (unexpected.length) problems.push(`unexpected requests: ${JSON.stringify(unexpected)}`);
if (problems.length) { console.error(problems.join('\n')); process.exit(1); }
const retried = issues.tasks.filter((t) => t.attempts > 1).length;
console.log(`[e2e] issue job SUCCEEDED: 4/4 tasks passed, ${retried} retried after the kill; evolve job SUCCEEDED: 1/1 graded (test score ${d.testScore}, ${d.evaluations} evaluations); FakeOpenAI answered ${chats} calls (${byRule('issue')} agent, ${byRule('evolve')} operator)`);
JS

# 7. down -v leaves nothing
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
say "timing: images $(secs "$build_ms") s, bring-up $(secs "$up_ms") s (all healthy after $(secs "$health_ms") s), job $(secs "$job_ms") s, model jobs $(secs "$models_ms") s, down $(secs "$down_ms") s"
say "PASSED"
