import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type Readable } from 'node:stream';
import {
  DockerSandboxBackend,
  Evaluator,
  ImageManager,
  managedLabelFilters,
} from '@troupe/node-agent';
import {
  applyFilePatch,
  loadIssueSuite,
  type LoadedIssueTask,
  packTar,
  packTree,
  parsePatch,
  PINNED_GRADER_ENV,
} from '../../src/issue-resolution';
import { TestCluster } from '@troupe/test-cluster';

// Every shipped bugfix-mini task, graded by its hidden grader in real Docker evaluator containers
// (the library Evaluator the evaluator actor runs): the repository as shipped must fail, the
// repository with solution.patch applied must pass.

jest.setTimeout(900_000);

const SUITE = path.resolve(__dirname, '../../suites/bugfix-mini');
// The task folders, listed synchronously for test.each (the loader is asynchronous).
const TASK_IDS = readdirSync(SUITE, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
let tasks: LoadedIssueTask[];

let tc: TestCluster;
let evaluator: Evaluator;
let backend: DockerSandboxBackend;
const images = new Map<string, string>();

beforeAll(async () => {
  tasks = (await loadIssueSuite(SUITE, 'suite')).tasks;
  // Only the Docker engine: the library Evaluator, no NATS.
  tc = await TestCluster.start({ nats: false, docker: true });
  const { docker, cluster } = tc;
  backend = new DockerSandboxBackend({ docker });
  evaluator = new Evaluator({
    backend,
    labels: { cluster, host: 'bugfix-host', actor: 'evaluator/bugfix-mini', job: 'bugfix-mini' },
    defaultTimeoutMs: 120_000,
  });
  const manager = new ImageManager({ docker });
  for (const image of new Set(tasks.map((t) => t.task.image))) {
    images.set(image, (await manager.ensure(image)).ref);
  }
});

afterAll(async () => {
  await backend?.close();
  const left = await tc.docker.listContainers({
    all: true,
    filters: { label: managedLabelFilters(tc.cluster) },
  });
  await tc.stop();
  expect(left).toEqual([]);
});

function workspaceOf(task: LoadedIssueTask, fixed: boolean): Buffer {
  const files = new Map(
    task.repo.entries
      .filter((e) => e.type === 'file')
      .map((e) => [e.rel, { data: readFileSync(path.join(task.repo.root, e.rel)), mode: e.mode }]),
  );
  if (fixed) {
    for (const p of parsePatch(task.solutionPatch!)) {
      const old = files.get(p.oldPath!)!;
      files.set(p.newPath!, {
        data: Buffer.from(applyFilePatch(old.data.toString('utf8'), p)),
        mode: old.mode,
      });
    }
  }
  return packTar([...files].map(([rel, f]) => ({ path: rel, ...f })));
}

function graderOf(task: LoadedIssueTask): Readable {
  return packTree(task.grader, 'grader/');
}

test('the suite ships at least 8 tasks', () => {
  expect(tasks.length).toBeGreaterThanOrEqual(8);
});

test.each(TASK_IDS)(
  '%s: the unfixed repository fails its grader, the reference fix passes',
  async (id) => {
    const task = tasks.find((t) => t.task.id === id)!;
    expect(task).toBeDefined();
    const grade = (fixed: boolean) =>
      evaluator.grade({
        workspaceTar: workspaceOf(task, fixed),
        graderFiles: graderOf(task),
        image: images.get(task.task.image)!,
        timeoutMs: task.task.timeouts.gradeMs,
        env: { ...PINNED_GRADER_ENV, GRADER_SEED: '0' },
      });
    const [unfixed, fixed] = await Promise.all([grade(false), grade(true)]);
    if (fixed.status !== 'passed') process.stderr.write(`${task.task.id}:\n${fixed.stdoutTail}\n`);
    expect(unfixed.status).toBe('failed');
    expect(unfixed.exitCode).not.toBe(0);
    expect(fixed.status).toBe('passed');
    expect(fixed.exitCode).toBe(0);
    expect(`${fixed.stdoutTail}\n${fixed.stderrTail}`).not.toMatch(/^FAILED/m);
  },
);
