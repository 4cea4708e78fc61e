import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { type JobEvent__Output } from '@troupe/proto';
import { type NatsServerHandle, waitFor } from '@troupe/testkit';
import { type TestCluster } from '@troupe/test-cluster';
import { startJobApiCluster } from './job-api-cluster';

// The job API end to end: the SDK over gRPC against a real coordinator (job and task actors,
// shell-tasks driver) and a real node agent running Docker sandboxes.

let server: NatsServerHandle;
let tc: TestCluster;

beforeAll(async () => {
  tc = await startJobApiCluster();
  server = tc.server;
});
afterAll(async () => {
  await tc?.stop();
  await server?.stop();
});

const SPEC = `
name: smoke
kind: shell-tasks
concurrency: 2
labels: {suite: smoke}
tasks:
  - {id: hello, command: 'echo hello from $GREETING', env: {GREETING: troupe}}
  - {id: fails, command: 'echo oops >&2; exit 3'}
  - {id: files, command: 'wc -l < data.txt', files: {data.txt: "a\\nb\\nc\\n"}}
  - {id: exit-two, command: 'exit 2', expectExitCode: 2}
`;

async function drain(iter: AsyncIterable<JobEvent__Output>): Promise<JobEvent__Output[]> {
  const out: JobEvent__Output[] = [];
  for await (const e of iter) out.push(e);
  return out;
}

test('submit, watch and read results of a shell-tasks job through the SDK', async () => {
  const client = tc.client();
  const job = await client.submitJob(SPEC);
  expect(job).toMatchObject({ name: 'smoke', kind: 'shell-tasks', state: 'QUEUED' });
  const events = await drain(client.watch(job.jobId, { signal: AbortSignal.timeout(90_000) }));
  expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  const started = events.filter((e) => e.type === 'TASK_STARTED');
  expect(started).toHaveLength(4);
  expect(JSON.parse(started[0]!.payloadJson)).toMatchObject({ attempt: 1 });

  const results = await client.getResults(job.jobId);
  expect(results.state).toBe('SUCCEEDED');
  const byId = Object.fromEntries(results.tasks.map((t) => [t.taskId, t]));
  expect(byId['hello']?.status).toBe('TASK_PASSED');
  expect(byId['fails']?.status).toBe('TASK_FAILED');
  expect(byId['files']?.status).toBe('TASK_PASSED');
  expect(byId['exit-two']?.status).toBe('TASK_PASSED');
  expect(JSON.parse(byId['hello']!.detailsJson)).toMatchObject({
    exitCode: 0,
    stdoutTail: 'hello from troupe\n',
  });
  expect(JSON.parse(byId['fails']!.detailsJson)).toMatchObject({
    exitCode: 3,
    stderrTail: 'oops\n',
  });
  expect(JSON.parse(byId['files']!.detailsJson)).toMatchObject({ stdoutTail: '3\n' });
  expect(results.aggregate).toMatchObject({ total: 4, passed: 3, failed: 1, pending: 0 });
  expect(results.aggregate?.passRate).toBeCloseTo(0.75);

  // The output artifact of a task, streamed back.
  const path = byId['hello']!.artifacts[0]!;
  expect(path).toBe(`jobs/${job.jobId}/tasks/hello/output.log`);
  const artifact = await client.downloadArtifact(job.jobId, path);
  expect(artifact.data.toString()).toBe('hello from troupe\n');
  expect(artifact.contentType).toMatch(/^text\/plain/);

  const listed = await client.listJobs({ labels: { suite: 'smoke' }, states: ['SUCCEEDED'] });
  expect(listed.jobs.map((j) => j.jobId)).toEqual([job.jobId]);
  const got = await client.getJob(job.jobId);
  expect(got.progress).toMatchObject({ total: 4, done: 4, passed: 3, failed: 1 });
  // Every sandbox of the job is gone.
  await waitFor(async () => (await tc.containers([`troupe.job=${job.jobId}`])).length === 0, {
    timeoutMs: 20_000,
  });
  const nodes = await client.listNodes();
  expect(nodes.map((n) => n.hostId)).toContain(tc.nodeAgent.hostId);

  // DeleteJob: the finished job and what it stored go, its output artifacts included.
  const deleted = await client.deleteJob(job.jobId);
  expect(deleted.deletedKeys).toBe(8); // a record and a result per task
  expect(deleted.deletedEvents).toBe(events.length);
  expect(deleted.deletedArtifacts).toBeGreaterThanOrEqual(4);
  await expect(client.getJob(job.jobId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  await expect(client.downloadArtifact(job.jobId, path)).rejects.toMatchObject({
    code: 'NOT_FOUND',
  });
  await expect(client.deleteJob(job.jobId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
});

test('a job that has not finished is not deleted: BUSY over the wire, not retryable', async () => {
  const client = tc.client();
  const job = await client.submitJob({
    kind: 'shell-tasks',
    tasks: [{ id: 'slow', command: 'sleep 60' }],
  });
  await expect(client.deleteJob(job.jobId)).rejects.toMatchObject({
    code: 'BUSY',
    retryable: false,
    message: expect.stringMatching(/only a finished job can be deleted \(cancel it first\)/),
  });
  await client.cancelJob(job.jobId);
  await drain(client.watch(job.jobId, { signal: AbortSignal.timeout(60_000) }));
  expect((await client.deleteJob(job.jobId)).deletedEvents).toBeGreaterThan(0);
});

test('a watch outliving its stream deadline reopens quietly, without gaps or duplicates', async () => {
  // Each stream lives 300 ms; the job takes seconds, so the watch reopens several times. A
  // stream's own deadline is not a failure: nothing is reported and no backoff is taken.
  const client = tc.client({ watchStreamMs: 300 });
  const job = await client.submitJob(`
name: long-watch
kind: shell-tasks
concurrency: 1
tasks:
  - {id: a, command: 'sleep 1; echo a'}
  - {id: b, command: 'sleep 1; echo b'}
`);
  const reconnects: string[] = [];
  const events = await drain(
    client.watch(job.jobId, {
      signal: AbortSignal.timeout(90_000),
      onReconnect: ({ error }) => reconnects.push(error.message),
    }),
  );
  expect(reconnects).toEqual([]);
  expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  expect(events.filter((e) => e.type === 'TASK_STARTED')).toHaveLength(2);
});

test('unauthenticated and wrongly authenticated calls are refused; the right token works', async () => {
  const anonymous = tc.client({ token: '' });
  await expect(anonymous.listJobs()).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  const wrong = tc.client({ token: 'x'.repeat(48) });
  await expect(wrong.submitJob(SPEC)).rejects.toMatchObject({
    code: 'UNAUTHENTICATED',
    message: 'invalid bearer token',
  });
  await expect(drain(wrong.watch('j-nope'))).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  await expect(wrong.listNodes()).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  await expect(tc.client().listJobs()).resolves.toBeDefined();
});

// Each malformed spec with (part of) the field path its error must name.
const MALFORMED: [string, string, 'yaml' | 'json'][] = [
  ['kind: [shell-tasks', '`spec`: is not valid YAML', 'yaml'],
  ['{"kind": "shell-tasks",', '`spec`: is not valid JSON', 'json'],
  ['', '`spec`: must be a non-empty', 'yaml'],
  ['42', '`spec`: must be a mapping', 'yaml'],
  ['tasks: []', 'spec.kind: is required', 'yaml'],
  [
    'kind: nope\ntasks: []',
    '`spec.kind`: unknown job kind (known: desktop-tasks, evolve, issue-resolution, rollout, rsi, shell-tasks, skill-sequence)',
    'yaml',
  ],
  ['kind: shell-tasks', 'spec.tasks: is required', 'yaml'],
  ['kind: shell-tasks\ntasks: 7', '`spec.tasks`: must be a list of tasks', 'yaml'],
  ['kind: shell-tasks\ntasks: [{id: a}]', 'spec.tasks[0].command', 'yaml'],
  [
    "kind: shell-tasks\ntasks: [{id: 'no spaces', command: 'true'}]",
    'spec.tasks[0].id: must match',
    'yaml',
  ],
  [
    "kind: shell-tasks\ntasks: [{id: a, command: 'true'}, {id: a, command: 'true'}]",
    '`spec.tasks[1].id`: must be unique',
    'yaml',
  ],
  ['kind: shell-tasks\ntasks: []\nconcurrency: 0', 'spec.concurrency: must be >= 1', 'yaml'],
  ['kind: shell-tasks\ntasks: []\nconcurrency: many', 'spec.concurrency: must be a number', 'yaml'],
  ['kind: shell-tasks\ntasks: []\nretries: {max: 99}', 'spec.retries.max: must be <= 10', 'yaml'],
  ['kind: shell-tasks\ntasks: []\nbudget: {usd: -5}', 'spec.budget.usd: must be >= 0', 'yaml'],
  ['kind: shell-tasks\ntasks: []\ntaskTimeoutMs: 5', 'spec.taskTimeoutMs: must be >= 100', 'yaml'],
  ['kind: shell-tasks\ntasks: []\nlabels: {team: 1}', 'spec.labels.team', 'yaml'],
  ['kind: shell-tasks\ntasks: []\nconcurency: 2', 'Unrecognized key: "concurency"', 'yaml'],
  [
    'kind: shell-tasks\ntasks: []\nconfig: {memoryMb: 1}',
    'spec.config.memoryMb: must be >= 16',
    'yaml',
  ],
  [
    "kind: shell-tasks\ntasks: [{id: a, command: 'true', expectExitCode: 300}]",
    'spec.tasks[0].expectExitCode: must be <= 255',
    'yaml',
  ],
  [
    "kind: shell-tasks\ntasks: {count: 0, command: 'true'}",
    'spec.tasks.count: must be >= 1',
    'yaml',
  ],
  ['kind: shell-tasks\ntasks: *nowhere', '`spec`: is not valid YAML', 'yaml'],
  [
    `kind: shell-tasks\na: &a [1]\ntasks: [${Array.from({ length: 101 }, () => '*a').join(',')}]`,
    '`spec`: must expand at most 100 aliases',
    'yaml',
  ],
  [
    "kind: shell-tasks\ntasks: [{id: a, command: 'true', env: {GH_TOKEN: x}}]",
    '`spec.tasks[0].env.GH_TOKEN`: looks like a secret',
    'yaml',
  ],
  [
    "kind: shell-tasks\nconfig: {env: {OPENAI_API_KEY: x}}\ntasks: [{id: a, command: 'true'}]",
    '`spec.config.env.OPENAI_API_KEY`: looks like a secret',
    'yaml',
  ],
  [
    "kind: shell-tasks\ntasks: [{id: a, command: 'true', env: {TROUPE_TASK: x}}]",
    '`spec.tasks[0].env.TROUPE_TASK`: the TROUPE_ prefix is reserved',
    'yaml',
  ],
  [
    "kind: shell-tasks\ntasks: [{id: a, command: 'true', cwd: sub/dir}]",
    'spec.tasks[0].cwd: must be an absolute path',
    'yaml',
  ],
  [
    "kind: shell-tasks\ntasks: [{id: a, command: 'true', image: troupe-nosuchrecipe}]",
    '`spec.tasks[0].image`: names no image recipe of deploy/images',
    'yaml',
  ],
  [
    "kind: shell-tasks\ntasks: [{id: a, command: 'true', image: 'not an image'}]",
    'spec.tasks[0].image: must be a Docker image reference',
    'yaml',
  ],
  [
    'kind: shell-tasks\ntasks: []\nagent: {model: gpt}',
    '`spec.agent`: shell-tasks runs no agent',
    'yaml',
  ],
];

test(`${MALFORMED.length} malformed specs are each refused naming the field; the server keeps serving`, async () => {
  const client = tc.client();
  for (const [spec, field, format] of MALFORMED) {
    const err = await client.submitJob(spec, { format }).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string },
    );
    expect({ spec, code: err?.code }).toEqual({ spec, code: 'INVALID_ARGUMENT' });
    expect({ spec, message: err?.message }).toEqual({
      spec,
      message: expect.stringContaining(field),
    });
  }
  // Still serving: a valid job runs to the end.
  const job = await client.submitJob("kind: shell-tasks\ntasks: [{id: ok, command: 'true'}]");
  const events = await drain(client.watch(job.jobId, { signal: AbortSignal.timeout(60_000) }));
  expect(JSON.parse(events.at(-1)!.payloadJson)).toMatchObject({ state: 'SUCCEEDED' });
});

test('a valid spec over the spec limit is refused naming the limit; one under it is stored', async () => {
  const client = tc.client();
  const specOf = (bytes: number) =>
    JSON.stringify({
      kind: 'shell-tasks',
      tasks: [{ id: 'big', command: 'wc -c < big.txt', files: { 'big.txt': 'x'.repeat(bytes) } }],
    });
  // 1.2 MiB: once stored as "already exists" and then missing.
  const err = await client.submitJob(specOf(1_200_000), { format: 'json' }).then(
    () => undefined,
    (e: unknown) => e as { code: string; message: string },
  );
  expect(err?.code).toBe('INVALID_ARGUMENT');
  expect(err?.message).toMatch(/`spec`: must be at most 524288 bytes/);
  const job = await client.submitJob(specOf(400_000), { format: 'json' });
  expect((await client.getJob(job.jobId)).jobId).toBe(job.jobId);
  const events = await drain(client.watch(job.jobId, { signal: AbortSignal.timeout(60_000) }));
  expect(JSON.parse(events.at(-1)!.payloadJson)).toMatchObject({ state: 'SUCCEEDED' });
});

test('40 concurrent deeply nested specs are refused while other calls are answered', async () => {
  const client = tc.client();
  const hostile = (i: number) => {
    const n = 200_000 + i; // 400 KB of brackets: seconds of yaml parsing each, before the limits
    return `kind: shell-tasks\ntasks: ${'['.repeat(n)}${']'.repeat(n)}\n`;
  };
  const submits = Array.from({ length: 40 }, (_, i) =>
    client.submitJob(hostile(i)).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string },
    ),
  );
  // A valid call made meanwhile gets its answer within a short deadline.
  const nodes = await client.listNodes({ timeoutMs: 3_000 });
  expect(nodes.length).toBeGreaterThan(0);
  for (const err of await Promise.all(submits)) {
    expect(err?.code).toBe('INVALID_ARGUMENT');
    expect(err?.message).toMatch(/`spec`: must nest mappings and lists at most 32 deep/);
  }
});

test('a task file of 2,500 tasks is uploaded once and run from its lines, in file order', async () => {
  const client = tc.client();
  // More tasks than a spec may list inline (2,000).
  const lines = Array.from({ length: 2_500 }, (_, i) =>
    JSON.stringify({ id: `t${i}`, command: i === 0 ? 'echo first of 2500' : 'true' }),
  );
  const data = Buffer.from(`${lines.join('\n')}\n`);
  const sha = createHash('sha256').update(data).digest('hex');
  let sent = 0;
  const stored = await client.uploadTaskFile(data, {
    name: 'tasks.jsonl',
    onProgress: (n) => (sent = n),
  });
  expect(stored).toEqual({ upload: `sha256:${sha}`, sizeBytes: data.length, lines: 2_500 });
  expect(sent).toBe(data.length);
  // The same bytes again: the same reference.
  expect((await client.uploadTaskFile(data, { name: 'again.jsonl' })).upload).toBe(stored.upload);

  const job = await client.submitJob({
    kind: 'shell-tasks',
    concurrency: 1,
    tasks: { file: 'tasks.jsonl', upload: stored.upload },
  });
  try {
    const first = await waitFor(
      async () => {
        const page = await client.getResultsPage(job.jobId, { pageSize: 1 });
        return page.tasks[0]?.status === 'TASK_PASSED' ? page : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200, message: 'the first task of the file passed' },
    );
    expect(first.aggregate?.total).toBe(2_500);
    expect(first.tasks[0]?.taskId).toBe('t0');
    expect(JSON.parse(first.tasks[0]!.detailsJson)).toMatchObject({
      stdoutTail: 'first of 2500\n',
    });
    const last = await client.getResultsPage(job.jobId, { pageSize: 1, offset: 2_499 });
    expect(last.tasks.map((t) => t.taskId)).toEqual(['t2499']);
  } finally {
    await client.cancelJob(job.jobId, 'test done');
  }
});

test('task files: a bad line, an unknown upload and a file without tasks are named', async () => {
  const client = tc.client();
  const bad = Buffer.from(
    '{"id":"a","command":"true"}\n\n{"id":"b","command":""}\n{"id":"c","command":"true"}\n',
  );
  const stored = await client.uploadTaskFile(bad, { name: 'bad.jsonl' });
  await expect(
    client.submitJob({ kind: 'shell-tasks', tasks: { file: 'bad.jsonl', upload: stored.upload } }),
  ).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringMatching(/^spec\.tasks\.file:3\.command: /),
  });
  const secret = Buffer.from('{"id":"a","command":"true","env":{"API_TOKEN":"x"}}\n');
  const withSecret = await client.uploadTaskFile(secret, { name: 'secret.jsonl' });
  await expect(
    client.submitJob({
      kind: 'shell-tasks',
      tasks: { file: 'secret.jsonl', upload: withSecret.upload },
    }),
  ).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('`spec.tasks.file:1.env.API_TOKEN`: looks like a secret'),
  });
  await expect(
    client.submitJob({
      kind: 'shell-tasks',
      tasks: { file: 'gone.jsonl', upload: `sha256:${'0'.repeat(64)}` },
    }),
  ).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('`spec.tasks.upload`: names no task file stored'),
  });
  await expect(
    client.uploadTaskFile(Buffer.from('\n\n'), { name: 'empty.jsonl' }),
  ).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('`chunks`: the task file holds no task'),
  });
  await expect(client.uploadTaskFile(Buffer.from('{}\n'), { name: '' })).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('`name`: is required'),
  });
});

test('a task file over 64 MiB is refused while it streams; the server keeps serving', async () => {
  const client = tc.client();
  const line = `${JSON.stringify({ id: 'x', command: 'true', files: { f: 'y'.repeat(1000) } })}\n`;
  const data = Buffer.from(line.repeat(Math.ceil((64 * 1024 * 1024 + 1) / line.length)));
  await expect(client.uploadTaskFile(data, { name: 'huge.jsonl' })).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('`chunks`: a task file must be at most 67108864 bytes'),
  });
  await expect(client.listJobs({ pageSize: 1 })).resolves.toBeDefined();
});

test('a request larger than the limit is refused cleanly', async () => {
  const client = tc.client();
  const huge = `kind: shell-tasks\ntasks: []\nname: x\n# ${'x'.repeat(5 * 1024 * 1024)}\n`;
  await expect(client.submitJob(huge)).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringContaining('larger than'),
  });
  await expect(client.listJobs({ pageSize: 1 })).resolves.toBeDefined();
});

test('TLS: a coordinator serving the API over TLS answers a client that trusts its CA', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'troupe-tls-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, `${tc.token}\n`);
  // A second (standby) coordinator of the same cluster, serving the API over TLS.
  const standby = await tc.startCoordinator({
    config: {
      grpc: { host: '127.0.0.1', port: 0, tokenFile, tls: { certFile: cert, keyFile: key } },
    },
  });
  try {
    const address = `127.0.0.1:${standby.grpcPort}`;
    const secure = tc.client({ address, tls: { ca: readFileSync(cert) } });
    const page = await secure.listJobs({ pageSize: 1 });
    expect(Array.isArray(page.jobs)).toBe(true);
    await expect(secure.getJob('j-none')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const plaintext = tc.client({ address, retry: { maxAttempts: 1 }, timeoutMs: 3_000 });
    await expect(plaintext.listJobs()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  } finally {
    await tc.stopCoordinator(standby);
  }
});
