import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Kvm } from '@nats-io/kv';
import { Directory } from '@troupe/actors';
import { type Coordinator, type JobEventRecord, taskActorId } from '@troupe/coordinator';
import { ArtifactStore } from '@troupe/node-agent';
import { kvBucketName } from '@troupe/proto';
import { TestCluster } from '@troupe/test-cluster';
import { waitFor } from '@troupe/testkit';
import {
  type TaskAgentRunContext,
  type TaskAgentRunner,
  createIssueResolutionDriver,
} from '../../src/issue-resolution';

// Task payloads of any size and shape, end to end (real nats-server, coordinator, node agent,
// Docker): a 50 MB repository staged through the object store and resolved by the gold agent; a
// tree of dot files, node_modules, __pycache__, empty folders and internal symlinks that arrives
// byte-identical in the grader (tree hashes computed on the host and inside the container); a
// symlink pointing outside the task and a task over `config.maxTaskMb` refused by name while the
// job's other tasks pass; a task whose task actor never starts timing out at taskTimeoutMs.

jest.setTimeout(900_000);

let tc: TestCluster;
let coordinator: Coordinator;
let work: string;

/** Released by the test: the `hold` agent waits for it. */
let release: () => void = () => undefined;
const held = new Promise<void>((resolve) => {
  release = resolve;
});

const holdRunner: TaskAgentRunner = {
  kind: 'hold',
  async run(ctx: TaskAgentRunContext) {
    await held;
    return {
      stopReason: 'finished',
      finalText: `held ${ctx.taskId}`,
      steps: 0,
      usage: { promptTokens: 0, completionTokens: 0 },
      costUsd: 0,
    };
  },
};

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'ir-payloads-'));
  tc = await TestCluster.start({
    coordinator: {
      drivers: [createIssueResolutionDriver({ agentRunners: [holdRunner] })],
      // No watchdog restarts of stopped task actors: the never-started test stops one on purpose.
      deps: { jobs: { watchdogMs: 3_600_000 } },
    },
    nodeAgent: { slots: { sandbox: 4, evaluator: 4 } },
  });
  coordinator = tc.coordinator;
});

afterAll(async () => {
  await tc?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** Submits a job, waits for it to finish, returns its results and events. */
async function runJob(spec: Record<string, unknown>) {
  const jobs = coordinator.jobs!;
  const started = Date.now();
  const record = await jobs.submit({ spec: { kind: 'issue-resolution', ...spec } });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(600_000) })) {
    events.push(e);
  }
  const wallMs = Date.now() - started;
  expect(events[events.length - 1]?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  const byId = new Map(results.tasks.map((t) => [t.taskId, t]));
  return { jobId: record.jobId, results, byId, events, wallMs };
}

/** Writes a file, creating its folder. */
function put(file: string, content: string | Buffer, mode = 0o644): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, content);
  chmodSync(file, mode);
}

/** A task folder: task.yaml, repo/ and grader/ from maps, solution.patch if given. */
function writeTask(
  suite: string,
  id: string,
  files: { repo: Record<string, string | Buffer>; grader: Record<string, string>; patch?: string },
): string {
  const dir = path.join(suite, id);
  put(
    path.join(dir, 'task.yaml'),
    `id: ${id}\nimage: base\ninstruction: |\n  Fix the bug described in this synthetic task ${id}.\ntimeouts: { agentMs: 120000, gradeMs: 120000 }\n`,
  );
  for (const [rel, content] of Object.entries(files.repo))
    put(path.join(dir, 'repo', rel), content);
  for (const [rel, content] of Object.entries(files.grader)) {
    put(path.join(dir, 'grader', rel), content, rel.endsWith('.sh') ? 0o755 : 0o644);
  }
  if (files.patch !== undefined) put(path.join(dir, 'solution.patch'), files.patch);
  return dir;
}

const CALC_BUGGY = '#!/bin/sh\necho $(( $1 - $2 ))\n';
const CALC_PATCH = `--- a/calc.sh\n+++ b/calc.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo $(( $1 - $2 ))\n+echo $(( $1 + $2 ))\n`;
const CALC_GRADER = `#!/bin/bash\nset -u\nout=$(sh "$WORKSPACE/calc.sh" 2 3)\nif [ "$out" != 5 ]; then echo "FAILED: calc.sh 2 3 gave $out"; exit 1; fi\necho ok\n`;

// The tree hash, computed the same way on the host and by the grader inside its container: one
// line per entry in byte order of the path — `d <path>`, `l <path> <target>`, `f <path> <sha256>
// <x|->` — hashed with sha256. `expected-hashes` (the grader's own input) is left out.
const TREE_HASH_SH = `tree_hash() {
  (cd "$1" && find . -mindepth 1 ! -path ./expected-hashes | LC_ALL=C sort | while IFS= read -r p; do
    if [ -L "$p" ]; then echo "l $p $(readlink "$p")"
    elif [ -d "$p" ]; then echo "d $p"
    else echo "f $p $(sha256sum < "$p" | cut -d' ' -f1) $([ -x "$p" ] && echo x || echo -)"; fi
  done) | sha256sum | cut -d' ' -f1
}
`;

function treeHash(root: string): string {
  const lines: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(root, rel))) {
      const r = rel === '' ? name : `${rel}/${name}`;
      if (r === 'expected-hashes') continue;
      const abs = path.join(root, r);
      const st = lstatSync(abs);
      const p = `./${r}`;
      if (st.isSymbolicLink()) lines.push(`l ${p} ${readlinkSync(abs)}`);
      else if (st.isDirectory()) {
        lines.push(`d ${p}`);
        walk(r);
      } else {
        const sha = createHash('sha256').update(readFileSync(abs)).digest('hex');
        lines.push(`f ${p} ${sha} ${st.mode & 0o111 ? 'x' : '-'}`);
      }
    }
  };
  walk('');
  lines.sort((a, b) => {
    const pa = a.split(' ')[1]!;
    const pb = b.split(' ')[1]!;
    return Buffer.compare(Buffer.from(pa), Buffer.from(pb));
  });
  return createHash('sha256')
    .update(lines.map((l) => `${l}\n`).join(''))
    .digest('hex');
}

test('a 50 MB repository is staged through the object store and resolved by gold', async () => {
  const suite = path.join(work, 'big');
  const repo: Record<string, Buffer | string> = { 'calc.sh': CALC_BUGGY };
  // Incompressible content: 25 files of 2 MiB of random bytes.
  for (let i = 0; i < 25; i++) repo[`data/blob-${i}.bin`] = randomBytes(2 * 1024 * 1024);
  writeTask(suite, 'big-repo', {
    repo,
    grader: { 'run-tests.sh': CALC_GRADER },
    patch: CALC_PATCH,
  });
  const { jobId, byId, wallMs, results } = await runJob({
    concurrency: 1,
    taskTimeoutMs: 600_000,
    config: { agent: { kind: 'gold' } },
    tasks: { suite },
  });
  process.stderr.write(
    `50 MB task: job wall ${wallMs} ms, aggregate ${results.aggregate.wallMs} ms\n`,
  );
  const t = byId.get('big-repo')!;
  process.stderr.write(`50 MB task durations: ${JSON.stringify(t.details?.['durationsMs'])}\n`);
  expect([t.status, t.error]).toEqual(['TASK_PASSED', '']);
  // Exported through exportFiles (far above the inline limit): still listed.
  const names = t.artifacts.map((a) => a.slice(a.lastIndexOf('/') + 1)).sort();
  expect(names).toEqual(expect.arrayContaining(['grader.tar', 'workspace.tar']));
  const store = await ArtifactStore.open(tc.nc, { cluster: tc.cluster });
  const workspace = await store.info(t.artifacts.find((a) => a.endsWith('/workspace.tar'))!);
  expect(workspace!.size).toBeGreaterThan(50 * 1024 * 1024);
  // The staged payload goes with the job.
  await waitFor(async () => (await store.list(`jobs/${jobId}/payload/`)).length === 0, {
    timeoutMs: 30_000,
    message: 'payload objects deleted',
  });
});

test('every file arrives; outside symlinks and oversized tasks fail alone, by name', async () => {
  const suite = path.join(work, 'shapes');
  // faithful: dot files, node_modules, __pycache__, an empty folder, executables, internal
  // symlinks (to a file, to a folder), a path longer than a ustar name.
  const deep =
    'very-long-folder-name-number-one/very-long-folder-name-number-two/very-long-folder-name-number-three';
  const dir = writeTask(suite, 'faithful', {
    repo: {
      '.env': 'SECRET=1\n',
      '.hidden/conf/.rc': 'x=1\n',
      'node_modules/pkg/index.js': 'module.exports = 1;\n',
      'node_modules/pkg/package.json': '{"name":"pkg"}\n',
      '__pycache__/mod.cpython-311.pyc': randomBytes(3000),
      'src/__pycache__/a.pyc': randomBytes(100),
      'src/mod.py': 'x = 1\n',
      [`${deep}/${deep}/file-with-a-long-name.txt`]: 'deep\n',
    },
    grader: {
      '.grader-dot': 'dot\n',
      'node_modules/helper/index.js': 'module.exports = 2;\n',
    },
  });
  const repoDir = path.join(dir, 'repo');
  put(path.join(repoDir, 'bin/run.sh'), '#!/bin/sh\necho run\n', 0o755);
  mkdirSync(path.join(repoDir, 'empty/inner'), { recursive: true });
  mkdirSync(path.join(repoDir, 'node_modules/.bin'), { recursive: true });
  symlinkSync('../pkg/index.js', path.join(repoDir, 'node_modules/.bin/pkg'));
  symlinkSync('../node_modules', path.join(repoDir, 'src/deps'));
  symlinkSync('mod.py', path.join(repoDir, 'src/alias.py'));
  const graderDir = path.join(dir, 'grader');
  symlinkSync('node_modules/helper', path.join(graderDir, 'helper'));
  put(
    path.join(graderDir, 'run-tests.sh'),
    `#!/bin/bash\nset -u\n${TREE_HASH_SH}read -r want_ws want_gr < "$GRADER_DIR/expected-hashes"\nws=$(tree_hash "$WORKSPACE"); gr=$(tree_hash "$GRADER_DIR")\necho "workspace $ws (host $want_ws)"; echo "grader $gr (host $want_gr)"\nif [ "$ws" != "$want_ws" ] || [ "$gr" != "$want_gr" ]; then echo "FAILED: tree hash differs"; (cd "$WORKSPACE" && find . | LC_ALL=C sort); exit 1; fi\n`,
    0o755,
  );
  writeFileSync(
    path.join(graderDir, 'expected-hashes'),
    `${treeHash(repoDir)} ${treeHash(graderDir)}\n`,
  );

  // escapes: a symlink leading out of repo/ (to the task's own grader).
  const escapes = writeTask(suite, 'escapes', {
    repo: { 'calc.sh': CALC_BUGGY },
    grader: { 'run-tests.sh': CALC_GRADER },
  });
  mkdirSync(path.join(escapes, 'repo/lib'));
  symlinkSync('../../grader/run-tests.sh', path.join(escapes, 'repo/lib/escape'));

  // too-big: 2 MiB of files against maxTaskMb 1.
  writeTask(suite, 'too-big', {
    repo: { 'calc.sh': CALC_BUGGY, 'blob.bin': randomBytes(2 * 1024 * 1024) },
    grader: { 'run-tests.sh': CALC_GRADER },
  });

  const { byId, results } = await runJob({
    concurrency: 3,
    taskTimeoutMs: 300_000,
    config: { agent: { kind: 'none' }, maxTaskMb: 1 },
    tasks: { suite },
  });
  const faithful = byId.get('faithful')!;
  if (faithful.status !== 'TASK_PASSED') {
    process.stderr.write(`${JSON.stringify(faithful.details, null, 1)}\n`);
  }
  expect(faithful.status).toBe('TASK_PASSED');
  expect(byId.get('escapes')).toMatchObject({ status: 'TASK_ERRORED' });
  expect(byId.get('escapes')!.error).toMatch(
    /task escapes: repo\/lib\/escape`: is a symlink pointing outside repo\/ \(to \.\.\/\.\.\/grader\/run-tests\.sh\)/,
  );
  expect(byId.get('too-big')).toMatchObject({ status: 'TASK_ERRORED' });
  expect(byId.get('too-big')!.error).toMatch(/more than config\.maxTaskMb \(1 MB\)/);
  expect((results.aggregate.extra as Record<string, unknown>)['invalidTasks']).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ taskId: 'escapes', field: 'repo/lib/escape' }),
      expect.objectContaining({ taskId: 'too-big', field: 'repo/' }),
    ]),
  );
});

test('a task whose task actor never starts times out at taskTimeoutMs', async () => {
  const suite = path.join(work, 'stuck');
  const task = { repo: { 'calc.sh': CALC_BUGGY }, grader: { 'run-tests.sh': 'exit 0\n' } };
  writeTask(suite, 'a-first', task);
  writeTask(suite, 'b-never', task);
  const jobs = coordinator.jobs!;
  const taskTimeoutMs = 15_000;
  const record = await jobs.submit({
    spec: {
      kind: 'issue-resolution',
      concurrency: 1,
      taskTimeoutMs,
      config: { agent: { kind: 'hold' } },
      tasks: { suite },
    },
  });
  const events: JobEventRecord[] = [];
  const watching = (async () => {
    for await (const e of await jobs.watch(record.jobId, {
      signal: AbortSignal.timeout(300_000),
    })) {
      events.push(e);
    }
  })();
  // While the first task holds the only slot, the second's task actor is stopped in the
  // directory: its `run` will be posted, but no host may activate it.
  await waitFor(() => events.some((e) => e.type === 'TASK_STARTED' && e.taskId === 'a-first'), {
    timeoutMs: 120_000,
    message: 'a-first started',
  });
  const directory = new Directory(
    await new Kvm(tc.nc).open(kvBucketName(tc.cluster, 'directory')),
    tc.nc,
  );
  const addr = { kind: 'job-task', id: taskActorId(record.jobId, 1) };
  const { entry, revision } = await directory.get(addr);
  expect(
    await directory.compareAndSet(addr, revision, {
      state: 'STOPPED',
      epoch: entry.epoch,
      updatedAtMs: Date.now(),
      reason: 'stopped by the test',
    }),
  ).toBeDefined();
  release();
  await watching;
  const queued = events.find((e) => e.type === 'TASK_QUEUED' && e.taskId === 'b-never')!;
  const ended = events.find((e) => e.type === 'TASK_GRADED' && e.taskId === 'b-never')!;
  expect(events.some((e) => e.type === 'TASK_STARTED' && e.taskId === 'b-never')).toBe(false);
  const waitedMs = ended.timeUnixMs - queued.timeUnixMs;
  expect(waitedMs).toBeGreaterThanOrEqual(taskTimeoutMs);
  // Reminders fire within a second; the margin is for a loaded machine.
  expect(waitedMs).toBeLessThan(taskTimeoutMs + 30_000);
  const results = await jobs.results(record.jobId);
  const byId = new Map(results.tasks.map((t) => [t.taskId, t]));
  expect(byId.get('a-first')!.status).toBe('TASK_PASSED');
  expect(byId.get('b-never')!.status).toBe('TASK_TIMED_OUT');
  expect(byId.get('b-never')!.error).toMatch(/did not start within taskTimeoutMs \(15000 ms\)/);
});
