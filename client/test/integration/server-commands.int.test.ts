import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { TroupeClient } from '@troupe/client';
import {
  ensureDocker,
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';

// The deployable entry points `troupe coordinator` and `troupe node-agent` as real processes
// (the built CLI, dist/): configured by the environment the way the container images are, a
// shell-tasks job submitted with the SDK and the bearer token, a wrong token refused, bad
// configuration refused before anything is opened, SIGTERM stopping both cleanly.

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
const NATS_USER = 'troupe';
const NATS_PASS = randomBytes(12).toString('hex');

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function start(args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  // 'close', not 'exit': on 'exit' the pipes may still hold output not yet read.
  const exited = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  return { child, output: () => out, exited };
}

let server: NatsServerHandle;
let dir: string;
const procs: Proc[] = [];
const cluster = randomClusterName();
const token = randomBytes(24).toString('hex');

beforeAll(async () => {
  await ensureDocker();
  server = await startNatsServer({ user: NATS_USER, password: NATS_PASS });
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-server-cmd-'));
  writeFileSync(path.join(dir, 'token'), `${token}\n`, { mode: 0o600 });
});
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await server?.stop();
});

const natsEnv = (): Record<string, string> => ({
  TROUPE_CLUSTER: cluster,
  TROUPE_NATS_URL: server.url,
  TROUPE_NATS_USER: NATS_USER,
  TROUPE_NATS_PASS: NATS_PASS,
});

test('bad configuration is refused before connecting, every problem named', async () => {
  writeFileSync(path.join(dir, 'bad.yaml'), 'grpc: {port: 50051}\nheartbeatMs: fast\nbogus: 1\n');
  const p = start(['coordinator', '--config', path.join(dir, 'bad.yaml')], {
    ...natsEnv(),
    TROUPE_METRICS_PORT: 'nine',
  });
  expect(await p.exited).toBe(2);
  const out = p.output();
  expect(out).toContain('TROUPE_METRICS_PORT: must be a non-negative integer');
  expect(out).toContain('config.heartbeatMs');
  expect(out).toContain('config.bogus: unknown field');
  expect(out).toContain('config.grpc.token: give token or tokenFile');

  const agent = start(['node-agent'], { ...natsEnv(), TROUPE_SLOTS: 'sandbox=many' });
  expect(await agent.exited).toBe(2);
  expect(agent.output()).toContain('TROUPE_SLOTS: sandbox=many is not a number');
});

test('coordinator and node agent processes run a shell-tasks job for a token holder', async () => {
  const coordReady = path.join(dir, 'coordinator.ready');
  const agentReady = path.join(dir, 'agent.ready');
  const coordinator = start(['coordinator', '--ready-file', coordReady], {
    ...natsEnv(),
    TROUPE_GRPC_HOST: '127.0.0.1',
    TROUPE_GRPC_PORT: '0',
    TROUPE_GRPC_TOKEN_FILE: path.join(dir, 'token'),
    TROUPE_METRICS_PORT: 'off',
    TROUPE_SHUTDOWN_GRACE_MS: '2000',
  });
  procs.push(coordinator);
  const agent = start(['node-agent', '--ready-file', agentReady], {
    ...natsEnv(),
    TROUPE_HOST_ID: `agent-${cluster.slice(-6)}`,
    TROUPE_SLOTS: 'sandbox=2',
  });
  procs.push(agent);
  await waitFor(() => existsSync(coordReady) && existsSync(agentReady), {
    timeoutMs: 60_000,
    message: 'coordinator and node agent ready files',
  }).catch((err: Error) => {
    throw new Error(`${err.message}\n${coordinator.output()}\n${agent.output()}`);
  });
  const { grpcPort } = JSON.parse(readFileSync(coordReady, 'utf8')) as { grpcPort: number };
  const address = `127.0.0.1:${grpcPort}`;

  const wrong = new TroupeClient({ address, token: 'y'.repeat(48), timeoutMs: 10_000 });
  await expect(wrong.listJobs()).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  wrong.close();

  const client = new TroupeClient({ address, token, timeoutMs: 20_000 });
  try {
    await waitFor(
      async () => (await client.listNodes()).some((n) => n.hostId === `agent-${cluster.slice(-6)}`),
      { timeoutMs: 30_000, message: 'node agent listed' },
    );
    const job = await client.submitJob(
      [
        'name: server-commands',
        'kind: shell-tasks',
        'tasks:',
        "  - {id: ok, command: 'echo deployed'}",
        "  - {id: bad, command: 'exit 5'}",
        '',
      ].join('\n'),
    );
    for await (const e of client.watch(job.jobId, { signal: AbortSignal.timeout(120_000) })) {
      if (e.type === 'JOB_FINISHED') break;
    }
    const results = await client.getResults(job.jobId);
    expect(results.state).toBe('SUCCEEDED');
    const byId = Object.fromEntries(results.tasks.map((t) => [t.taskId, t.status]));
    expect(byId).toEqual({ ok: 'TASK_PASSED', bad: 'TASK_FAILED' });
  } finally {
    client.close();
  }

  agent.child.kill('SIGTERM');
  coordinator.child.kill('SIGTERM');
  expect(await agent.exited).toBe(0);
  expect(await coordinator.exited).toBe(0);
  expect(existsSync(coordReady)).toBe(false);
  expect(existsSync(agentReady)).toBe(false);
  expect(coordinator.output()).toContain('coordinator stopped');
  expect(agent.output()).toContain('node agent stopped');
});

test('agent-host: a bad config is refused before connecting; with a models file it registers as an agent host and stops on SIGTERM', async () => {
  const noModels = start(['agent-host'], { ...natsEnv(), TROUPE_SHUTDOWN_GRACE_MS: 'soon' });
  expect(await noModels.exited).toBe(2);
  expect(noModels.output()).toContain('TROUPE_SHUTDOWN_GRACE_MS: must be a non-negative integer');
  expect(noModels.output()).toContain('config.modelsFile: give --models or TROUPE_MODELS_FILE');

  writeFileSync(path.join(dir, 'bad-models.yaml'), 'models:\n  m: {model: x, inputUsdPer1M: -1}\n');
  const badModels = start(['agent-host', '--models', path.join(dir, 'bad-models.yaml')], natsEnv());
  expect(await badModels.exited).not.toBe(0);
  expect(badModels.output()).toContain('bad-models.yaml');

  const models = path.join(dir, 'models.yaml');
  writeFileSync(
    models,
    'models:\n  fake:\n    baseURL: http://127.0.0.1:9/v1\n    apiKeyEnv: AGENT_HOST_TEST_KEY\n    model: fake-model\n' +
      '    inputUsdPer1M: 1\n    outputUsdPer1M: 2\n',
  );
  const coordReady = path.join(dir, 'coordinator-2.ready');
  const hostReady = path.join(dir, 'agent-host.ready');
  const hostId = `agents-${cluster.slice(-6)}`;
  const coordinator = start(['coordinator', '--ready-file', coordReady], {
    ...natsEnv(),
    TROUPE_GRPC_HOST: '127.0.0.1',
    TROUPE_GRPC_PORT: '0',
    TROUPE_GRPC_TOKEN_FILE: path.join(dir, 'token'),
    TROUPE_METRICS_PORT: 'off',
    TROUPE_SHUTDOWN_GRACE_MS: '2000',
  });
  procs.push(coordinator);
  const host = start(['agent-host', '--ready-file', hostReady], {
    ...natsEnv(),
    TROUPE_MODELS_FILE: models,
    TROUPE_HOST_ID: hostId,
    TROUPE_SHUTDOWN_GRACE_MS: '1000',
    AGENT_HOST_TEST_KEY: 'sk-agent-host-test',
  });
  procs.push(host);
  await waitFor(() => existsSync(coordReady) && existsSync(hostReady), {
    timeoutMs: 60_000,
    message: 'coordinator and agent host ready files',
  }).catch((err: Error) => {
    throw new Error(`${err.message}\n${coordinator.output()}\n${host.output()}`);
  });
  expect(JSON.parse(readFileSync(hostReady, 'utf8'))).toMatchObject({ hostId });
  const { grpcPort } = JSON.parse(readFileSync(coordReady, 'utf8')) as { grpcPort: number };
  const client = new TroupeClient({ address: `127.0.0.1:${grpcPort}`, token, timeoutMs: 20_000 });
  try {
    await waitFor(
      async () =>
        (await client.listNodes()).some((n) => n.hostId === hostId && n.kinds.includes('agent')),
      { timeoutMs: 30_000, message: 'agent host listed with the agent kind' },
    );
  } finally {
    client.close();
  }
  // The key is read from the environment and never logged.
  expect(host.output()).not.toContain('sk-agent-host-test');
  host.child.kill('SIGTERM');
  expect(await host.exited).toBe(0);
  expect(existsSync(hostReady)).toBe(false);
  expect(host.output()).toContain('agent host stopped');
  coordinator.child.kill('SIGTERM');
  expect(await coordinator.exited).toBe(0);
});
