import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { type CliIo } from '../../src/cli/cli-io';
import { runCli } from '../../src/cli/run-cli';
import { type NatsServerHandle } from '@troupe/testkit';
import { type TestCluster } from '@troupe/test-cluster';
import { startJobApiCluster } from './job-api-cluster';

// The troupe CLI: commands run in-process (runCli) against a real cluster, and `troupe run` as
// the built binary (child processes use dist/).

let server: NatsServerHandle;
let tc: TestCluster;
let dir: string;

beforeAll(async () => {
  tc = await startJobApiCluster();
  server = tc.server;
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-cli-'));
  writeFileSync(
    path.join(dir, 'job.yaml'),
    [
      'name: cli-test',
      'kind: shell-tasks',
      'concurrency: 2',
      'labels: {origin: cli}',
      'tasks:',
      "  - {id: ok, command: 'echo fine'}",
      "  - {id: bad, command: 'exit 4'}",
      '',
    ].join('\n'),
  );
  writeFileSync(path.join(dir, 'bad.yaml'), 'kind: shell-tasks\ntasks: [{id: a}]\n');
});
afterAll(async () => {
  await tc?.stop();
  await server?.stop();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function sink(): { stream: PassThrough & { isTTY?: boolean }; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString() };
}

async function cli(args: string[], opts: { token?: string } = {}): Promise<Run> {
  const out = sink();
  const err = sink();
  const io: CliIo = {
    stdout: out.stream,
    stderr: err.stream,
    env: {},
    cwd: dir,
    onInterrupt: () => () => undefined,
  };
  const code = await runCli(
    ['--address', tc.address, '--token', opts.token ?? tc.token, ...args],
    io,
  );
  return { code, stdout: out.text(), stderr: err.text() };
}

test('submit --watch, jobs, results (table, json, html), artifact and nodes', async () => {
  const submitted = await cli(['submit', 'job.yaml', '--watch']);
  expect(submitted.code).toBe(0); // ran to completion, although a task failed
  const jobId = submitted.stdout.trim();
  expect(jobId).toMatch(/^j-/);
  expect(submitted.stderr).toContain(`job ${jobId} SUCCEEDED — 1/2 passed (50.0%)`);

  const jobs = await cli(['jobs', '--label', 'origin=cli']);
  expect(jobs.code).toBe(0);
  expect(jobs.stdout).toMatch(
    new RegExp(`${jobId}\\s+cli-test\\s+shell-tasks\\s+SUCCEEDED\\s+2/2\\s+50.0%`),
  );

  const table = await cli(['results', jobId]);
  expect(table.stdout).toMatch(/ok\s+passed\s+1\s+1/);
  expect(table.stdout).toMatch(/bad\s+failed\s+0\s+1/);
  expect(table.stdout).toContain('pass rate 50.0%');

  const json = JSON.parse((await cli(['results', jobId, '--format', 'json'])).stdout) as {
    aggregate: { passed: number };
    tasks: { taskId: string; details: { exitCode: number } }[];
  };
  expect(json.aggregate.passed).toBe(1);
  expect(json.tasks.find((t) => t.taskId === 'bad')?.details.exitCode).toBe(4);

  const html = await cli(['results', jobId, '--format', 'html', '-o', 'report.html']);
  expect(html.code).toBe(0);
  const report = readFileSync(path.join(dir, 'report.html'), 'utf8');
  expect(report).toMatch(/^<!doctype html>/);
  expect(report.match(/<svg /g)?.length).toBe(3); // the status chart and one per task
  expect(report).not.toMatch(/<script|src=|https?:\/\//);
  // The only links are to the tasks' artifacts, copied beside the report.
  expect(report.match(/href="[^"]*"/g)?.sort()).toEqual([
    'href="report.html.files/bad/output.log"',
    'href="report.html.files/ok/output.log"',
  ]);
  expect(readFileSync(path.join(dir, 'report.html.files', 'ok', 'output.log'), 'utf8')).toBe(
    'fine\n',
  );

  const artifact = await cli(['artifact', jobId, `jobs/${jobId}/tasks/ok/output.log`]);
  expect(artifact).toMatchObject({ code: 0, stdout: 'fine\n' });

  // Slots in use come from the last heartbeat, so the finished job's sandboxes may still count.
  const nodes = await cli(['nodes']);
  expect(nodes.stdout).toMatch(new RegExp(`${tc.nodeAgent.hostId}\\s+READY\\s+sandbox \\d+/\\d+`));

  const events = await cli(['watch', jobId, '--json']);
  const lines = events.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { sequence: number; type: string });
  expect(lines.map((l) => l.sequence)).toEqual(lines.map((_, i) => i + 1));
  expect(lines.at(-1)?.type).toBe('JOB_FINISHED');
});

test('errors are one line with documented exit codes', async () => {
  const invalid = await cli(['submit', 'bad.yaml']);
  expect(invalid.code).toBe(3);
  expect(invalid.stderr.trim().split('\n')).toHaveLength(1);
  expect(invalid.stderr).toMatch(/^troupe: spec\.tasks\[0\]\.command: /);

  const missing = await cli(['results', 'j-does-not-exist']);
  expect(missing).toMatchObject({ code: 4, stderr: 'troupe: job j-does-not-exist not found\n' });

  const unauthenticated = await cli(['jobs'], { token: 'wrong-token-wrong-token' });
  expect(unauthenticated).toMatchObject({ code: 5, stderr: 'troupe: invalid bearer token\n' });

  const noFile = await cli(['submit', 'nope.yaml']);
  expect(noFile.code).toBe(2);
  expect(noFile.stderr).toMatch(/^troupe: cannot read spec nope\.yaml: /);

  const usage = await cli(['results']);
  expect(usage.code).toBe(2);
});

test('submit uploads the task file a spec names; a bad line is named by its number', async () => {
  mkdirSync(path.join(dir, 'files'), { recursive: true });
  writeFileSync(
    path.join(dir, 'files', 'tasks.jsonl'),
    '{"id":"one","command":"echo 1"}\r\n\n{"id":"two","command":["sh","-c","echo 2"]}\n',
  );
  writeFileSync(
    path.join(dir, 'from-file.yaml'),
    'name: from-file\nkind: shell-tasks\ntasks: {file: files/tasks.jsonl}\n',
  );
  const submitted = await cli(['submit', 'from-file.yaml', '--watch']);
  expect(submitted.code).toBe(0);
  expect(submitted.stderr).toMatch(/uploaded files\/tasks\.jsonl: 2 tasks, sha256:/);
  const jobId = submitted.stdout.trim();
  expect(submitted.stderr).toContain(`job ${jobId} SUCCEEDED — 2/2 passed (100.0%)`);
  const json = JSON.parse((await cli(['results', jobId, '--format', 'json'])).stdout) as {
    tasks: { taskId: string; details: { stdoutTail: string } }[];
  };
  expect(json.tasks.map((t) => [t.taskId, t.details.stdoutTail])).toEqual([
    ['one', '1\n'],
    ['two', '2\n'],
  ]);

  writeFileSync(
    path.join(dir, 'files', 'bad.jsonl'),
    '{"id":"one","command":"true"}\n{"id":"two","comand":"true"}\n',
  );
  writeFileSync(
    path.join(dir, 'bad-file.yaml'),
    'kind: shell-tasks\ntasks: {file: files/bad.jsonl}\n',
  );
  const bad = await cli(['submit', 'bad-file.yaml']);
  expect(bad.code).toBe(3);
  expect(bad.stderr.trim().split('\n').at(-1)).toMatch(/^troupe: spec\.tasks\.file:2/);

  writeFileSync(
    path.join(dir, 'no-file.yaml'),
    'kind: shell-tasks\ntasks: {file: nowhere.jsonl}\n',
  );
  const missing = await cli(['submit', 'no-file.yaml']);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toMatch(
    /^troupe: cannot read the task file nowhere\.jsonl \(spec\.tasks\.file\): /,
  );
});

test('cancel through the CLI; watch then exits 1 with the reason', async () => {
  const spec = path.join(dir, 'slow.yaml');
  writeFileSync(spec, "kind: shell-tasks\ntasks: {count: 2, command: 'sleep 120'}\n");
  const jobId = (await cli(['submit', 'slow.yaml'])).stdout.trim();
  const cancelled = await cli(['cancel', jobId, '--reason', 'enough']);
  expect(cancelled).toMatchObject({ code: 0, stdout: `job ${jobId}: cancellation requested\n` });
  const watched = await cli(['watch', jobId]);
  expect(watched.code).toBe(1);
  expect(watched.stderr.trim().split('\n').at(-1)).toBe(`troupe: job ${jobId} CANCELLED: enough`);

  // Deleted once finished; a second delete is told there is no such job (exit 4).
  const deleted = await cli(['delete', jobId]);
  expect(deleted.code).toBe(0);
  expect(deleted.stdout).toMatch(
    new RegExp(`^job ${jobId} deleted \\(\\d+ task records, \\d+ events, \\d+ artifacts\\)\n$`),
  );
  const again = await cli(['delete', jobId]);
  expect(again.code).toBe(4);
  expect(again.stderr).toMatch(new RegExp(`job ${jobId} not found`));
});

const built = path.resolve(__dirname, '../../dist/cli/main.js');
(existsSync(built) ? test : test.skip)(
  'troupe run (the built binary): embedded cluster, results as JSON, exit 0',
  async () => {
    const child = spawn(process.execPath, [built, 'run', 'job.yaml', '--json'], {
      cwd: dir,
      env: { ...process.env, TROUPE_DATA_DIR: path.join(dir, '.troupe-run') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    const results = JSON.parse(stdout) as {
      state: string;
      aggregate: { total: number; passed: number };
    };
    expect(results).toMatchObject({ state: 'SUCCEEDED', aggregate: { total: 2, passed: 1 } });
    expect(stderr).toContain('stopping the embedded cluster');
  },
);

const QUICK_SUITE = path.resolve(
  __dirname,
  '../../../benchmarks/test/integration/evolve-fixtures/quick-suite',
);
(existsSync(built) ? test : test.skip)(
  'troupe run --json keeps the selected program of an evolve task after the cluster stops',
  async () => {
    writeFileSync(
      path.join(dir, 'evolve.yaml'),
      [
        'kind: evolve',
        'taskTimeoutMs: 300000',
        'retries: {max: 0}',
        'config: {evaluatorSlots: 1, saveJournal: false}',
        'tasks:',
        `  - {id: quick, suite: ${JSON.stringify(QUICK_SUITE)}, limits: {maxEvaluations: 2, maxGenerations: 1},`,
        '     search: {islands: 1, draftsPerIsland: 1}}',
        '',
      ].join('\n'),
    );
    const dataDir = path.join(dir, '.troupe-evolve');
    const child = spawn(process.execPath, [built, 'run', 'evolve.yaml', '--json'], {
      cwd: dir,
      env: { ...process.env, TROUPE_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    const results = JSON.parse(stdout) as {
      jobId: string;
      tasks: { taskId: string; status: string; files: Record<string, string> }[];
    };
    const task = results.tasks[0]!;
    expect(task.status).toBe('TASK_PASSED');
    const program = Object.entries(task.files).find(([a]) => a.endsWith('/program.py'));
    expect(program).toBeDefined();
    // The copy outlives the run's data directory, in <data-dir>/results/<jobId>/.
    expect(program![1].startsWith(path.join(dataDir, 'results', results.jobId))).toBe(true);
    expect(readFileSync(program![1], 'utf8')).toContain('troupe:param');
    expect(stderr).toContain(`artifacts kept in ${path.join(dataDir, 'results', results.jobId)}`);
  },
  600_000,
);

(existsSync(built) ? test : test.skip)(
  'troupe validate: checks a suite and runs its seed once; a crashing grader fails with its traceback',
  async () => {
    const validate = async (target: string): Promise<{ code: number | null; stdout: string }> => {
      const child = spawn(process.execPath, [built, 'validate', target], {
        cwd: dir,
        env: { ...process.env, TROUPE_DATA_DIR: path.join(dir, '.troupe-validate') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      return { code, stdout };
    };
    const good = await validate(QUICK_SUITE);
    expect(good.stdout).toContain('seed seed/program.py: 2 marked parameters (X, Y)');
    expect(good.stdout).toMatch(
      /ok {2}seed-check: the seeds scored under the grader, best validation score -0\.0[0-9]+/,
    );
    expect(good.code).toBe(0);
    const bad = await validate(path.join(QUICK_SUITE, '../crashing-grader-suite'));
    expect(bad.stdout).toContain('FAIL seed-check');
    expect(bad.stdout).toContain('task.yaml.seeds[0]');
    // The full stderr tail, not only the cut task error.
    expect(bad.stdout).toMatch(/line 7, in score_of.*ZeroDivisionError: division by zero/);
    expect(bad.code).toBe(3);
  },
  600_000,
);
