import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { connect, PermissionViolationError, type NatsConnection } from '@nats-io/transport-node';
import {
  applyFilePatch,
  createModelAgentRunner,
  parsePatch,
  registerBuiltinDrivers,
} from '@troupe/benchmarks';
import { TroupeClient } from '@troupe/client';
import { Coordinator, DriverRegistry } from '@troupe/coordinator';
import { ModelRegistry } from '@troupe/llm';
import { NodeAgent } from '@troupe/node-agent';
import { leaseSubject } from '@troupe/proto';
import { spawnNodeProcess } from '@troupe/test-cluster';
import {
  ensureDocker,
  FakeOpenAI,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
  type ScriptedResponse,
} from '@troupe/testkit';
import { runShellJobUnderUsers } from './support/run-job-under-users';

// The NATS roles and users of the compose deployment on a real nats-server, with the users file
// that deploy/compose/gen-env.sh generates for two node agents: the coordinator and both node
// agents (each its own user) run a shell-tasks job; a node agent cannot touch the other one's
// host control subjects nor run under its host id; no node agent, agent host or client can
// publish where its role does not allow, nor reach the evaluator lease subjects. An agent host
// (the `troupe agent-host` process) runs an issue-resolution job's model agents under its own
// user, and is refused everything else.

const ROOT = path.resolve(__dirname, '../../..');
const COMPOSE = path.resolve(__dirname, '../../compose');
const CLI = path.join(ROOT, 'client/dist/cli/main.js'); // built by the jest global set-up
const CLUSTER = 'troupe'; // the cluster name nats.conf is written for
const T = `troupe.${CLUSTER}`;

let server: NatsServerHandle;
let dir: string;
let env: Record<string, string>;
let agentA: string; // node agent 1's host id = its NATS user
let agentB: string;
const conns: NatsConnection[] = [];

beforeAll(async () => {
  await ensureDocker(); // gen-env.sh reads the Docker socket's group
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-nats-perm-'));
  execFileSync('bash', [
    path.join(COMPOSE, 'gen-env.sh'),
    '--output',
    path.join(dir, '.env'),
    '--node-agents',
    '2',
  ]);
  env = Object.fromEntries(
    readFileSync(path.join(dir, '.env'), 'utf8')
      .split('\n')
      .filter((l) => /^[A-Z0-9_]+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  agentA = env['TROUPE_NODE_AGENT_1_ID']!;
  agentB = env['TROUPE_NODE_AGENT_2_ID']!;
  // The variables compose passes in the environment are substituted into copies (a spawned
  // process does not see jest's process.env); JetStream and auth come from the config files.
  const vars: Record<string, string> = { ...env, TROUPE_NATS_STORE_DIR: path.join(dir, 'js') };
  const substitute = (file: string) =>
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(/\$(TROUPE_[A-Z0-9_]+)/g, (_m, name: string) => {
        const value = vars[name];
        if (value === undefined) throw new Error(`${file} uses an unknown variable ${name}`);
        return JSON.stringify(value);
      }),
    );
  copyFileSync(path.join(COMPOSE, 'nats.conf'), path.join(dir, 'nats.conf'));
  copyFileSync(path.join(COMPOSE, 'nats-roles.conf'), path.join(dir, 'nats-roles.conf'));
  substitute(path.join(dir, 'nats.conf'));
  substitute(path.join(dir, 'nats-users.conf'));
  server = await startNatsServer({ jetstream: false, args: ['-c', path.join(dir, 'nats.conf')] });
});
afterAll(async () => {
  for (const nc of conns) await nc.close().catch(() => undefined);
  await server?.stop();
});

/** The NATS user and password of a role, or of node agent 1 (`A`) or 2 (`B`). */
function creds(who: 'coordinator' | 'client' | 'agent-host' | 'A' | 'B') {
  switch (who) {
    case 'A':
      return { user: agentA, pass: env['TROUPE_NATS_NODE_AGENT_1_PASSWORD']! };
    case 'B':
      return { user: agentB, pass: env['TROUPE_NATS_NODE_AGENT_2_PASSWORD']! };
    case 'coordinator':
      return { user: who, pass: env['TROUPE_NATS_COORDINATOR_PASSWORD']! };
    case 'client':
      return { user: who, pass: env['TROUPE_NATS_CLIENT_PASSWORD']! };
    case 'agent-host':
      return { user: who, pass: env['TROUPE_NATS_AGENT_HOST_PASSWORD']! };
  }
}

async function as(who: Parameters<typeof creds>[0]): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url, ...creds(who) });
  conns.push(nc);
  return nc;
}

/**
 * Publishes `denied` then `marker` from `from`, with `to` subscribed to both; once the marker
 * arrives (one publisher's messages arrive in order) returns whether `denied` got through (a
 * refused publish or a refused subscription both mean it did not).
 */
async function delivered(from: NatsConnection, to: NatsConnection, denied: string, marker: string) {
  const seen: string[] = [];
  const a = to.subscribe(denied, { callback: (_e, m) => void seen.push(m.subject) });
  const b = to.subscribe(marker, { callback: (_e, m) => void seen.push(m.subject) });
  await to.flush();
  from.publish(denied, 'x');
  from.publish(marker, 'x');
  await from.flush();
  await waitFor(() => seen.includes(marker), { timeoutMs: 10_000, message: `marker ${marker}` });
  a.unsubscribe();
  b.unsubscribe();
  return seen.includes(denied);
}

const nonce = () => randomBytes(4).toString('hex');

test('wrong or missing credentials are refused', async () => {
  await expect(connect({ servers: server.url })).rejects.toThrow(/Authorization/i);
  await expect(
    connect({ servers: server.url, user: agentA, pass: 'not-the-password' }),
  ).rejects.toThrow(/Authorization/i);
  // One node agent's password is not another's.
  await expect(
    connect({ servers: server.url, user: agentB, pass: creds('A').pass }),
  ).rejects.toThrow(/Authorization/i);
});

test('the coordinator and two node agents, each with its own user, run a job', async () => {
  // Four tasks on two agents of two sandbox slots each.
  const statuses = await runShellJobUnderUsers({
    cluster: CLUSTER,
    coordinatorNats: { servers: server.url, ...creds('coordinator') },
    agents: (['A', 'B'] as const).map((who) => ({
      cluster: CLUSTER,
      hostId: who === 'A' ? agentA : agentB,
      nats: { servers: server.url, ...creds(who) },
    })),
    tasks: { a: 'echo ok', b: 'exit 1', c: 'echo ok', d: 'echo ok' },
  });
  expect(statuses).toEqual({
    a: 'TASK_PASSED',
    b: 'TASK_FAILED',
    c: 'TASK_PASSED',
    d: 'TASK_PASSED',
  });
});

test("a node agent cannot start under another node agent's host id", async () => {
  await ensureDocker();
  await expect(
    NodeAgent.start({
      cluster: CLUSTER,
      hostId: agentB,
      nats: { servers: server.url, ...creds('A') },
      shutdownGraceMs: 0,
    }),
  ).rejects.toThrow(new RegExp(`may not subscribe to ${T}\\.host\\.${agentB}\\.`));
});

test("a node agent cannot subscribe to or publish on another node agent's host subjects", async () => {
  const coord = await as('coordinator');
  const a = await as('A');
  const b = await as('B');
  // Markers each receiver may subscribe to.
  const replyMarker = `_INBOX.marker${nonce()}`;
  // Its own control subjects reach it; the other host's do not.
  expect(await delivered(coord, a, `${T}.host.${agentA}.ping`, replyMarker)).toBe(true);
  for (const verb of ['ping', 'activate', 'deactivate', 'stats', 'drain']) {
    expect(await delivered(coord, a, `${T}.host.${agentB}.${verb}`, replyMarker)).toBe(false);
  }
  expect(await delivered(coord, a, `${T}.host.*.activate`, replyMarker)).toBe(false);
  expect(await delivered(coord, a, `${T}.host.>`, replyMarker)).toBe(false);
  // Publishing: B hears its own control subjects from the coordinator, never from A.
  const actorMarker = `${T}.actor.sandbox.marker${nonce()}`;
  expect(await delivered(coord, b, `${T}.host.${agentB}.activate`, actorMarker)).toBe(true);
  expect(await delivered(a, b, `${T}.host.${agentB}.activate`, actorMarker)).toBe(false);
  expect(await delivered(a, b, `${T}.host.${agentB}.deactivate`, actorMarker)).toBe(false);
});

test('a node agent cannot publish job events or write coordinator buckets', async () => {
  const coord = await as('coordinator');
  const agent = await as('A');
  const marker = `${T}.actor.marker.${nonce()}`;
  expect(await delivered(agent, coord, `${T}.actor.sandbox.s1`, marker)).toBe(true);
  expect(await delivered(agent, coord, `$KV.troupe_${CLUSTER}_state.sandbox.s1`, marker)).toBe(
    true,
  );
  for (const denied of [
    `${T}.events.j-1`,
    `$KV.troupe_${CLUSTER}_jobs.j-1`,
    `$KV.troupe_${CLUSTER}_leases.leader`,
    `$KV.troupe_${CLUSTER}_budget.scope`,
    // State and directory entries of kinds it does not host (a job's state, say).
    `$KV.troupe_${CLUSTER}_state.job.j-1`,
    `$KV.troupe_${CLUSTER}_directory.job.j-1`,
    // The JetStream API outside its named streams.
    `$JS.API.STREAM.DELETE.TROUPE_${CLUSTER.toUpperCase()}_INBOX`,
    `$JS.API.STREAM.PURGE.KV_troupe_${CLUSTER}_jobs`,
    `$JS.API.CONSUMER.CREATE.KV_troupe_${CLUSTER}_jobs`,
    `$JS.API.DIRECT.GET.KV_troupe_${CLUSTER}_budget`,
  ]) {
    expect([denied, await delivered(agent, coord, denied, marker)]).toEqual([denied, false]);
  }
});

test('a node agent cannot answer for coordinator services or coordinator-hosted actors', async () => {
  const coord = await as('coordinator');
  const agent = await as('A');
  const marker = `_INBOX.marker${nonce()}`;
  expect(await delivered(coord, agent, `${T}.actor.sandbox.s1`, marker)).toBe(true);
  for (const denied of [
    `${T}.coord.directory.lookup`,
    `${T}.coord.nodes.register`,
    `${T}.actor.job.j-1`,
    `${T}.actor.evolve-island.i-1`,
    `${T}.actor.budget-ledger.b-1`,
    `${T}.events.j-1`,
  ]) {
    expect([denied, await delivered(coord, agent, denied, marker)]).toEqual([denied, false]);
  }
});

test('only coordinators may serve or request evaluator leases', async () => {
  const coord = await as('coordinator');
  const owner = await as('coordinator'); // the search owner: another coordinator connection
  const subject = leaseSubject(CLUSTER, randomBytes(12).toString('hex'));
  const acquire = JSON.stringify({ op: 'acquire', stepId: 's', attemptId: 'a', requestId: 'r' });
  // The island's real path: a coordinator asks the owner, who answers.
  const served = owner.subscribe(subject, {
    callback: (_e, m) => void m.respond('{"evaluator":"e1"}'),
  });
  await owner.flush();
  expect((await coord.request(subject, acquire, { timeout: 5_000 })).string()).toBe(
    '{"evaluator":"e1"}',
  );
  served.unsubscribe();
  const marker = `_INBOX.marker${nonce()}`;
  const coordMarker = `${T}.actor.sandbox.marker${nonce()}`; // all three roles may publish it
  for (const who of ['A', 'agent-host', 'client'] as const) {
    const nc = await as(who);
    // Cannot forge a request to the owner (acquire, or release someone else's sandbox) ...
    expect([who, await delivered(nc, owner, subject, coordMarker)]).toEqual([who, false]);
    // ... nor serve the subject and steal the island's requests.
    expect([who, await delivered(coord, nc, subject, marker)]).toEqual([who, false]);
  }
});

test('a client account may only address actors', async () => {
  const coord = await as('coordinator');
  const client = await as('client');
  const marker = `${T}.actor.marker.${nonce()}`;
  expect(await delivered(client, coord, `${T}.inbox.agent.a1`, marker)).toBe(true);
  expect(await delivered(client, coord, `${T}.host.h1.activate`, marker)).toBe(false);
  expect(await delivered(client, coord, `${T}.events.j-1`, marker)).toBe(false);
  expect(await delivered(client, coord, `$KV.troupe_${CLUSTER}_state.agent.a1`, marker)).toBe(
    false,
  );
});

/**
 * Which of `ops` (`publish <subject>`, `subscription <subject>`) the server refuses a new
 * connection of `who` with a permission violation: does them in order, then publishes to a lease
 * subject (refused to every role but the coordinator's); the server answers a connection in
 * order, so once that one's violation arrives every other has.
 */
async function refusals(who: Parameters<typeof creds>[0], ops: readonly string[]) {
  const nc = await as(who);
  const refused: string[] = [];
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'error' && s.error instanceof PermissionViolationError) {
        refused.push(`${s.error.operation} ${s.error.subject}`);
      }
    }
  })();
  for (const op of ops) {
    const [verb, subject = ''] = op.split(' ');
    if (verb === 'publish') nc.publish(subject, 'x');
    else nc.subscribe(subject);
  }
  const markerSubject = leaseSubject(CLUSTER, `marker-${nonce()}`);
  const marker = `publish ${markerSubject}`;
  nc.publish(markerSubject, 'x');
  await nc.flush();
  await waitFor(() => refused.includes(marker), {
    timeoutMs: 10_000,
    message: `the refusal of ${marker}`,
  });
  await nc.close();
  return refused.filter((r) => r !== marker);
}

/** The scripted model of the agent-host test: reads the code, writes the fix, finishes. */
function slugifyFixer(): (body: { messages: unknown[] }) => ScriptedResponse {
  const task = path.join(ROOT, 'benchmarks/suites/bugfix-mini/js-slugify');
  const fixed = parsePatch(readFileSync(path.join(task, 'solution.patch'), 'utf8')).map((p) => {
    const rel = p.newPath ?? p.oldPath ?? '';
    const old = p.oldPath ? readFileSync(path.join(task, 'repo', p.oldPath), 'utf8') : '';
    return { path: rel, content: applyFilePatch(old, p) };
  });
  const usage = { prompt_tokens: 1_000, completion_tokens: 100 };
  const steps: ScriptedResponse[] = [
    { toolCalls: [{ name: 'run_terminal_command', arguments: { command: 'node --test test/' } }] },
    { toolCalls: [{ name: 'view_file', arguments: { path: 'src/slugify.js' } }] },
    ...fixed.map((f) => ({ toolCalls: [{ name: 'write_file', arguments: f }] })),
    { toolCalls: [{ name: 'finish_task', arguments: { summary: 'fixed' } }] },
  ];
  return (body) => {
    const step = body.messages.filter((m) => (m as { role: string }).role === 'assistant').length;
    const next = steps[step];
    if (!next) throw new Error(`the script has no step ${step}`);
    return { ...next, usage };
  };
}

test('an agent host under its own user runs model agents, and is refused everything else', async () => {
  await ensureDocker();
  const key = `sk-${nonce()}`;
  const fake = new FakeOpenAI({ apiKey: key });
  await fake.start();
  const fixer = slugifyFixer();
  fake.setHandler((req) => fixer(req.body));
  const modelsYaml = [
    'models:',
    '  fake:',
    `    baseURL: ${fake.baseURL}`,
    '    apiKeyEnv: FAKE_LLM_KEY',
    '    model: fake-model',
    '    inputUsdPer1M: 1',
    '    outputUsdPer1M: 10',
    '',
  ].join('\n');
  const modelsFile = path.join(dir, 'models.yaml');
  writeFileSync(modelsFile, modelsYaml);
  // A skill folder, pushed to the skill store when the host starts.
  mkdirSync(path.join(dir, 'skills', 'bisect'), { recursive: true });
  writeFileSync(
    path.join(dir, 'skills', 'bisect', 'SKILL.md'),
    '---\nname: bisect\ndescription: Find a bad commit.\n---\nRun git bisect.\n',
  );
  const token = randomBytes(24).toString('hex');
  // The coordinator knows the models (to accept the job) but hosts no agents: every session runs
  // on the agent host.
  const coordinator = await Coordinator.start(
    {
      cluster: CLUSTER,
      nats: { servers: server.url, ...creds('coordinator') },
      metrics: { port: null },
      shutdownGraceMs: 0,
      grpc: { host: '127.0.0.1', port: 0, token },
    },
    {
      drivers: registerBuiltinDrivers(new DriverRegistry(), {
        issueResolution: {
          agentRunners: [createModelAgentRunner({ models: ModelRegistry.fromYaml(modelsYaml) })],
        },
      }),
    },
  );
  let nodeAgent: NodeAgent | undefined;
  const hostId = `agents-${nonce()}`;
  const host = spawnNodeProcess(CLI, ['agent-host', '--skills', path.join(dir, 'skills')], {
    name: 'agent-host',
    env: {
      TROUPE_CLUSTER: CLUSTER,
      TROUPE_NATS_URL: server.url,
      TROUPE_NATS_USER: creds('agent-host').user,
      TROUPE_NATS_PASS: creds('agent-host').pass,
      TROUPE_HOST_ID: hostId,
      TROUPE_MODELS_FILE: modelsFile,
      TROUPE_SHUTDOWN_GRACE_MS: '2000',
      TROUPE_LOG_LEVEL: 'info',
      FAKE_LLM_KEY: key,
    },
  });
  const client = new TroupeClient({
    address: `127.0.0.1:${coordinator.grpcPort}`,
    token,
    timeoutMs: 20_000,
  });
  try {
    nodeAgent = await NodeAgent.start({
      cluster: CLUSTER,
      hostId: agentA,
      nats: { servers: server.url, ...creds('A') },
      slots: { sandbox: 2 },
      shutdownGraceMs: 2_000,
    });
    await waitFor(
      () => {
        const hosts = coordinator.registry?.schedulable().map((h) => h.info.hostId) ?? [];
        return hosts.includes(agentA) && hosts.includes(hostId);
      },
      { timeoutMs: 60_000, message: 'the node agent and the agent host registered' },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nagent host:\n${host.output()}`);
    });
    const job = await client.submitJob(
      JSON.stringify({
        name: 'agent-host-permissions',
        kind: 'issue-resolution',
        budget: { usd: 5 },
        agent: { model: 'fake', maxSteps: 10 },
        config: { agent: { kind: 'model' } },
        tasks: { suite: path.join(ROOT, 'benchmarks/suites/bugfix-mini'), include: ['js-slugify'] },
      }),
      { format: 'json' },
    );
    for await (const e of client.watch(job.jobId, { signal: AbortSignal.timeout(300_000) })) {
      if (e.type === 'JOB_FINISHED') break;
    }
    const results = await client.getResults(job.jobId);
    expect(results.state).toBe('SUCCEEDED');
    expect(results.tasks.map((t) => [t.taskId, t.status, t.stopReason])).toEqual([
      ['js-slugify', 'TASK_PASSED', 'finished'],
    ]);
    // Every model call (run the tests, read, write the fix, finish) was charged to the job
    // through the budget ledger: 1000 × $1/M + 100 × $10/M = $0.002 each.
    expect(fake.chatRequests).toHaveLength(4);
    expect(results.tasks[0]?.costUsd).toBeCloseTo(4 * 0.002, 6);
    expect(results.tasks[0]?.artifacts.some((a) => a.endsWith('trajectory.jsonl'))).toBe(true);
    expect(fake.unexpectedRequests).toEqual([]);
    // It stops cleanly (deregisters, releases its actors), and met no refusal on the way.
    expect(await host.kill('SIGTERM')).toBe(0);
    expect(host.output()).toContain('agent host stopped');
    // (nats-server logs each refusal with the client's connection name.)
    const violation = new RegExp(`"[^"]*:troupe-agents-${hostId}" - \\w+ Violation`);
    expect(
      server
        .output()
        .split('\n')
        .filter((l) => violation.test(l)),
    ).toEqual([]);

    // Refused what it never does: job events, leases, coordinator buckets and subjects, other
    // kinds' actors, entries and streams. Those marked (old) the former deny list allowed.
    const S = `TROUPE_${CLUSTER.toUpperCase()}`;
    const kv = (bucket: string) => `troupe_${CLUSTER}_${bucket}`;
    const refused = [
      `publish ${T}.events.j-1`,
      `publish ${leaseSubject(CLUSTER, nonce())}`,
      `publish $KV.${kv('jobs')}.j-1`,
      `publish $KV.${kv('budget')}.cluster`,
      `publish $KV.${kv('leases')}.leader`,
      `publish $JS.API.STREAM.DELETE.${S}_INBOX`,
      `publish $JS.API.STREAM.DELETE.KV_${kv('memory')}`,
      `publish $JS.API.STREAM.CREATE.${S}_EVENTS`, // (old)
      `publish $JS.API.STREAM.PURGE.KV_${kv('state')}`, // (old)
      `publish $JS.API.DIRECT.GET.KV_${kv('state')}.$KV.${kv('state')}.job.j-1`, // (old)
      `publish $KV.${kv('state')}.job.j-1`, // (old)
      `publish $KV.${kv('directory')}.sandbox.s-1`, // (old)
      `publish ${T}.host.${agentA}.activate`, // (old)
      `publish ${T}.actor.job.j-1`, // (old)
      `publish ${T}.inbox.job.j-1`, // (old)
      `publish ${T}.coord.sched.remind`, // (old)
      `subscription ${T}.coord.>`,
      `subscription ${T}.coord.sched.activate`,
      `subscription ${T}.events.>`,
      `subscription ${T}.lease.>`,
      // The coordinator's kinds, then the node agents'.
      ...['job', 'job-task', 'evolve-island', 'budget-ledger', 'rate-limit']
        .concat(['sandbox', 'evaluator', 'environment'])
        .map((kind) => `subscription ${T}.actor.${kind}.*`),
      `subscription ${T}.actor.>`, // (old)
      `subscription ${T}.inbox.>`, // (old)
      `subscription $KV.${kv('jobs')}.>`, // (old)
      `subscription ${T}.host.${agentA}.drain`, // (old)
    ];
    // What the job above needed is not refused.
    const allowed = [
      `publish ${T}.actor.sandbox.none-${nonce()}`,
      `publish ${T}.actor.budget-ledger.none-${nonce()}`,
      `subscription ${T}.actor.agent.*`,
      `subscription ${T}.host.${hostId}.activate`,
      `subscription ${T}.trajectory.*`,
    ];
    expect(await refusals('agent-host', [...refused, ...allowed])).toEqual(refused);
  } finally {
    client.close();
    await host.kill();
    await nodeAgent?.stop();
    await coordinator.stop();
    await fake.close();
  }
});
