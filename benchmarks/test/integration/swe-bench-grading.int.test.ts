import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Coordinator, type JobEventRecord } from '@troupe/coordinator';
import { createIssueResolutionDriver } from '../../src/issue-resolution';
import { TestCluster } from '@troupe/test-cluster';

// SWE-bench grading end to end (real nats-server, coordinator, node agent and Docker): instances
// of the shipped lib-fixes suite in their task environment, a predictions file graded without an
// agent. One prediction resolves its instance; one fixes the FAIL_TO_PASS tests but regresses a
// PASS_TO_PASS test (not resolved); one is empty (FAIL_TO_PASS still failing, PASS_TO_PASS
// already passing: not resolved); a Python instance (pytest, Debian's python3-pytest) resolves.
// The sandbox's workspace is a git repository at the base: the agent's change comes back as its
// `git diff` (agent.patch), and the exported workspace holds no .git. Malformed instances are
// reported naming the field.

jest.setTimeout(1_200_000);

const SUITE = path.resolve(__dirname, '../../suites/lib-fixes');
const RESOLVED = 'visionmedia__bytes.js-3.1.2';
const REGRESSED = 'jshttp__range-parser-1.1.0';
const EMPTY = 'jshttp__fresh-0.5.2';
const PYTHON = 'more-itertools__more-itertools-9.1.0';

let tc: TestCluster;
let coordinator: Coordinator;
let work: string;

interface Instance {
  instance_id: string;
  patch: string;
  [k: string]: unknown;
}

function instances(): Instance[] {
  return readFileSync(path.join(SUITE, 'instances.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Instance);
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'swe-bench-'));
  const suite = path.join(work, 'suite');
  cpSync(SUITE, suite, { recursive: true });
  const keep = instances().filter((i) =>
    [RESOLVED, REGRESSED, EMPTY, PYTHON].includes(i.instance_id),
  );
  const missingTestPatch: Record<string, unknown> = {
    ...keep[0]!,
    instance_id: 'bad-no-test-patch',
  };
  delete missingTestPatch['test_patch'];
  const badList = { ...keep[0]!, instance_id: 'bad-list', FAIL_TO_PASS: '["unterminated' };
  writeFileSync(
    path.join(suite, 'instances.jsonl'),
    [...keep, missingTestPatch, badList].map((i) => JSON.stringify(i)).join('\n') + '\n',
  );
  const gold = new Map(keep.map((i) => [i.instance_id, i.patch]));
  // Fixes the partial-range bug, but answers [] instead of -1 when no range is satisfiable.
  const regressing = gold
    .get(REGRESSED)!
    .replace('+  return ranges.length ? ranges : -1', '+  return ranges');
  expect(regressing).not.toBe(gold.get(REGRESSED));
  writeFileSync(
    path.join(work, 'predictions.jsonl'),
    [
      { instance_id: RESOLVED, model_patch: gold.get(RESOLVED), model_name_or_path: 'oracle' },
      { instance_id: REGRESSED, model_patch: regressing, model_name_or_path: 'oracle' },
      { instance_id: EMPTY, model_patch: '', model_name_or_path: 'oracle' },
      { instance_id: PYTHON, model_patch: gold.get(PYTHON), model_name_or_path: 'oracle' },
    ]
      .map((p) => JSON.stringify(p))
      .join('\n') + '\n',
  );
  tc = await TestCluster.start({
    coordinator: { drivers: [createIssueResolutionDriver()] },
    nodeAgent: { slots: { sandbox: 4, evaluator: 4 } },
  });
  coordinator = tc.coordinator;
});

async function readArtifact(jobId: string, artifactPath: string): Promise<Buffer> {
  const reader = await coordinator.jobs!.artifact(jobId, artifactPath);
  const chunks: Uint8Array[] = [];
  for await (const c of reader.chunks) chunks.push(c);
  return Buffer.concat(chunks);
}

afterAll(async () => {
  await tc?.stop();
  rmSync(work, { recursive: true, force: true });
});

test('a predictions file is graded without an agent, from FAIL_TO_PASS and PASS_TO_PASS', async () => {
  const jobs = coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'issue-resolution',
      concurrency: 3,
      taskTimeoutMs: 900_000,
      config: { agent: { kind: 'predictions' }, createTimeoutMs: 900_000 },
      tasks: { suite: path.join(work, 'suite'), predictions: path.join(work, 'predictions.jsonl') },
    },
  });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, {
    signal: AbortSignal.timeout(1_100_000),
  })) {
    events.push(e);
  }
  expect(events[events.length - 1]?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  const byId = new Map(results.tasks.map((t) => [t.taskId, t]));
  const details = (id: string) => byId.get(id)?.details ?? {};
  const table = (id: string) =>
    Object.fromEntries(
      (details(id)['tests'] as { test: string; list: string; status: string }[]).map((r) => [
        r.test,
        `${r.list} ${r.status}`,
      ]),
    );

  expect(byId.get(RESOLVED)?.status).toBe('TASK_PASSED');
  expect(details(RESOLVED)).toMatchObject({
    resolved: true,
    agentKind: 'predictions',
    predictionModel: 'oracle',
    failToPass: { passed: 1, total: 1 },
    passToPass: { passed: 2, total: 2 },
  });

  expect(byId.get(REGRESSED)?.status).toBe('TASK_FAILED');
  expect(details(REGRESSED)).toMatchObject({ resolved: false });
  expect(table(REGRESSED)).toMatchObject({
    'parseRange(len, str) > should ignore unsatisfiable ranges when another range is valid':
      'FAIL_TO_PASS PASSED',
    'parseRange(len, str) > should return -1 if all specified ranges are invalid':
      'PASS_TO_PASS FAILED',
    'parseRange(len, str) > should parse str': 'PASS_TO_PASS PASSED',
  });

  expect(byId.get(EMPTY)?.status).toBe('TASK_FAILED');
  expect(details(EMPTY)).toMatchObject({
    resolved: false,
    failToPass: { passed: 0, total: 1 },
    passToPass: { passed: 4, total: 4 },
  });
  expect(table(EMPTY)).toMatchObject({
    'fresh(reqHeaders, resHeaders) > when requested with If-None-Match > should be fresh on ETag in a list':
      'FAIL_TO_PASS FAILED',
    'fresh(reqHeaders, resHeaders) > when requested with If-None-Match > should be fresh when ETags match':
      'PASS_TO_PASS PASSED',
  });

  expect(byId.get(PYTHON)?.status).toBe('TASK_PASSED');
  expect(details(PYTHON)).toMatchObject({
    resolved: true,
    failToPass: { passed: 1, total: 1 },
    passToPass: { passed: 3, total: 3 },
  });
  expect(table(PYTHON)).toMatchObject({
    'tests/test_split_after.py::test_split_after_maxsplit_separator_last': 'FAIL_TO_PASS PASSED',
  });

  // The workspace was a git repository at the base: the agent's change is its git diff, the
  // unchanged workspace an empty one; the exported workspace has no .git.
  for (const id of [RESOLVED, REGRESSED, EMPTY, PYTHON]) {
    expect([id, details(id)['workspaceRepo']]).toEqual([id, 'created']);
  }
  const links = (id: string) => details(id)['links'] as Record<string, string>;
  const pyPatch = (await readArtifact(record.jobId, links(PYTHON)['agentPatch']!)).toString();
  expect(pyPatch).toContain('diff --git a/more_itertools/more.py b/more_itertools/more.py');
  expect(pyPatch).toContain('+                if buf:');
  expect(details(EMPTY)['agentPatch']).toEqual({ state: 'patch', bytes: 0 });
  const workspaceTar = await readArtifact(record.jobId, links(PYTHON)['workspace']!);
  expect(workspaceTar.includes('more_itertools/more.py')).toBe(true);
  expect(workspaceTar.includes('.git/')).toBe(false);
  expect(workspaceTar.includes('troupe-base')).toBe(false);

  // Malformed instances: reported naming the field, never run; the rest ran.
  expect(byId.get('bad-no-test-patch')?.status).toBe('TASK_ERRORED');
  expect(byId.get('bad-list')?.status).toBe('TASK_ERRORED');
  const invalid = (results.aggregate.extra as Record<string, unknown>)['invalidTasks'];
  expect(invalid).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ taskId: 'bad-no-test-patch', field: 'test_patch' }),
      expect.objectContaining({ taskId: 'bad-list', field: 'FAIL_TO_PASS' }),
    ]),
  );
});
