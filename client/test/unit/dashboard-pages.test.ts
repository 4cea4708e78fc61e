import { type IncomingMessage } from 'node:http';
import { type Job__Output, type JobResults__Output, TroupeError } from '@troupe/proto';
import { DashboardAuth } from '../../src/dashboard/dashboard-auth';
import { jobSummary } from '../../src/dashboard/dashboard-server';
import { evolveView } from '../../src/dashboard/evolve-view';
import { eventTail, resumeSequence } from '../../src/dashboard/job-event-stream';
import {
  isPlanWindow,
  parseTaskPageQuery,
  taskPage,
  windowPage,
} from '../../src/dashboard/task-page';
import { trajectoryView } from '../../src/dashboard/trajectory-view';

function results(n: number): JobResults__Output {
  return {
    jobId: 'j1',
    state: 'RUNNING',
    aggregate: null,
    tasks: Array.from({ length: n }, (_, i) => ({
      taskId: `t${i}`,
      status: i % 3 === 0 ? 'TASK_FAILED' : 'TASK_PASSED',
      score: i / n,
      attempts: 1,
      costUsd: i * 0.01,
      tokens: i,
      durationMs: 1000 + i,
      stopReason: i === 7 ? 'max_steps' : 'finished',
      error: i === 5 ? 'sandbox died' : '',
      artifacts: [],
      detailsJson: '{}',
    })),
  } as unknown as JobResults__Output;
}

describe('task pages', () => {
  test('a page of a 100,000-task job holds only the rows asked for', () => {
    const page = taskPage(
      results(100_000),
      parseTaskPageQuery(new URLSearchParams('offset=500&limit=100')),
    );
    expect(page.total).toBe(100_000);
    expect(page.matched).toBe(100_000);
    expect(page.rows).toHaveLength(100);
    expect(page.rows[0]?.taskId).toBe('t500');
    expect(page.rows[0]?.index).toBe(500);
    expect(page.rows[0]?.status).toBe('TASK_PASSED');
  });

  test('a plain stretch of the plan is one GetResults page from its offset', () => {
    const q = (s: string) => parseTaskPageQuery(new URLSearchParams(s));
    expect(isPlanWindow(q('offset=500&limit=100'))).toBe(true);
    expect(isPlanWindow(q('status=TASK_FAILED'))).toBe(false);
    expect(isPlanWindow(q('q=t5'))).toBe(false);
    expect(isPlanWindow(q('sort=cost'))).toBe(false);
    expect(isPlanWindow(q('sort=index&desc=1'))).toBe(false);
    // The page the coordinator returns for offset 500: tasks 500… with the job's aggregate.
    const whole = results(100_000);
    const served = {
      ...whole,
      aggregate: { total: 100_000 },
      tasks: whole.tasks.slice(500, 600),
    } as unknown as JobResults__Output;
    const page = windowPage(served, q('offset=500&limit=100'));
    expect(page).toEqual(taskPage(whole, q('offset=500&limit=100')));
    // The last page of the job is short; past its end there are no rows.
    const tail = windowPage(
      { ...served, tasks: whole.tasks.slice(99_950) },
      q('offset=99950&limit=100'),
    );
    expect(tail.rows.map((r) => r.index)).toEqual(Array.from({ length: 50 }, (_, k) => 99_950 + k));
    expect(windowPage({ ...served, tasks: [] }, q('offset=200000')).rows).toEqual([]);
  });

  test('filter by status, search and sort run on the server', () => {
    const r = results(30);
    const failed = taskPage(r, parseTaskPageQuery(new URLSearchParams('status=TASK_FAILED')));
    expect(failed.matched).toBe(10);
    expect(failed.rows.every((x) => x.status === 'TASK_FAILED')).toBe(true);
    expect(
      taskPage(r, parseTaskPageQuery(new URLSearchParams('q=SANDBOX'))).rows.map((x) => x.taskId),
    ).toEqual(['t5']);
    expect(
      taskPage(r, parseTaskPageQuery(new URLSearchParams('q=max_steps'))).rows.map((x) => x.taskId),
    ).toEqual(['t7']);
    const byCost = taskPage(r, parseTaskPageQuery(new URLSearchParams('sort=cost&desc=1&limit=2')));
    expect(byCost.rows.map((x) => x.taskId)).toEqual(['t29', 't28']);
  });

  test.each([
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['offset=-1', 'offset'],
    ['sort=nope', 'sort'],
    ['status=passed!', 'status'],
    ['colour=red', 'query'],
  ])('bad query %s is INVALID_ARGUMENT naming %s', (q, field) => {
    let err: unknown;
    try {
      parseTaskPageQuery(new URLSearchParams(q));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TroupeError);
    expect((err as TroupeError).code).toBe('INVALID_ARGUMENT');
    expect((err as TroupeError).details?.['field']).toBe(field);
  });
});

describe('login sessions', () => {
  const req = (cookie?: string) => ({ headers: cookie ? { cookie } : {} }) as IncomingMessage;

  test('only the token logs in; the cookie carries a session id, never the token', () => {
    let now = 1_000;
    const auth = new DashboardAuth({
      token: 'the-job-api-token-123',
      sessionTtlMs: 60_000,
      now: () => now,
    });
    expect(auth.checkToken('wrong-token-of-any-length')).toBe(false);
    expect(auth.checkToken('the-job-api-token-123')).toBe(true);
    const cookie = auth.login(false);
    expect(cookie).toMatch(
      /^troupe_dashboard=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\//,
    );
    expect(cookie).not.toContain('the-job-api-token-123');
    const value = cookie.split(';')[0]!;
    expect(auth.isLoggedIn(req(`other=1; ${value}`))).toBe(true);
    expect(auth.isLoggedIn(req('troupe_dashboard=forged-session-id-xxxxxxxxxxxxx'))).toBe(false);
    expect(auth.isLoggedIn(req())).toBe(false);
    now += 60_001;
    expect(auth.isLoggedIn(req(value))).toBe(false);
  });

  test('logout ends the session', () => {
    const auth = new DashboardAuth({ token: 'the-job-api-token-123' });
    const value = auth.login(true).split(';')[0]!;
    expect(auth.isLoggedIn(req(value))).toBe(true);
    expect(auth.logout(req(value))).toContain('Max-Age=0');
    expect(auth.isLoggedIn(req(value))).toBe(false);
  });
});

test('a reconnect resumes after Last-Event-ID, a first load after ?after=', () => {
  expect(resumeSequence(undefined, null)).toBe(1);
  expect(resumeSequence('41', null)).toBe(42);
  expect(resumeSequence('41', '7')).toBe(42);
  expect(resumeSequence(undefined, '7')).toBe(8);
  expect(resumeSequence('x; drop', null)).toBe(1);
});

test('job summaries: pass rate over finished tasks, ETA from the rate so far', () => {
  const job = {
    jobId: 'j',
    name: 'n',
    kind: 'shell-tasks',
    state: 'RUNNING',
    reason: '',
    labels: {},
    createdUnixMs: 0,
    startedUnixMs: 1_000,
    progress: { total: 100, done: 20, passed: 15, failed: 5, running: 2, costUsd: 0.5 },
    specJson: '{}',
  } as unknown as Job__Output;
  const s = jobSummary(job, 11_000);
  expect(s['passRate']).toBeCloseTo(0.75);
  expect(s['etaMs']).toBe(40_000); // 10 s for 20 tasks → 40 s for the other 80
  expect(jobSummary({ ...job, state: 'SUCCEEDED' }, 11_000)['etaMs']).toBeNull();
});

test('trajectory steps: messages, tool calls, costs and subagent sessions', () => {
  const lines = [
    {
      sessionId: 's1',
      seq: 1,
      epoch: 1,
      runId: 'r',
      atMs: 1,
      type: 'run_start',
      messages: [{ role: 'user', content: 'fix it' }],
      data: {},
    },
    {
      sessionId: 's1',
      seq: 2,
      epoch: 1,
      runId: 'r',
      atMs: 2,
      type: 'model_call',
      messages: [
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c1', name: 'write_file', argumentsText: '{"path":"a"}' }],
        },
      ],
      data: {
        costUsd: 0.002,
        usage: { promptTokens: 1000, completionTokens: 100, totalTokens: 1100 },
      },
    },
    {
      sessionId: 's1',
      seq: 3,
      epoch: 1,
      runId: 'r',
      atMs: 3,
      type: 'tool_call',
      data: { name: 'create_subagent', subagentSessionId: 's2' },
    },
    {
      sessionId: 's2',
      seq: 1,
      epoch: 1,
      runId: 'r2',
      atMs: 4,
      type: 'model_call',
      messages: [],
      data: { costUsd: 0.001 },
    },
  ].map((l) => JSON.stringify(l));
  const v = trajectoryView(`${lines.join('\n')}\nnot json\n`);
  expect(v.sessions).toEqual(['s1', 's2']);
  expect(v.totalCostUsd).toBeCloseTo(0.003);
  expect(v.steps[1]).toMatchObject({ type: 'model_call', costUsd: 0.002, tokens: 1100 });
  expect(v.steps[1]?.messages[0]?.toolCalls).toEqual([
    { name: 'write_file', args: '{"path":"a"}' },
  ]);
  expect(v.steps[2]).toMatchObject({ tool: 'create_subagent', subagent: 's2' });
  expect(v.parents).toEqual({ s1: null, s2: 's1' });
  expect(v.steps.at(-1)?.type).toBe('unparsed');
});

test('evolve view: the lineage of the selected node with diffs from each parent', () => {
  const node = (id: string, parents: string[], source: string, score: number) =>
    JSON.stringify({
      type: 'node',
      attemptId: id,
      generation: parents.length,
      island: 0,
      operator: parents.length ? 'improve' : 'draft',
      parentIds: parents,
      program: { source },
      result: { score },
    });
  const journal = [
    JSON.stringify({ type: 'task', taskId: 'or3' }),
    node('a', [], 'x = 1\n', 0.1),
    node('b', ['a'], 'x = 2\n', 0.2),
    node('c', ['b'], 'x = 2\ny = 3\n', 0.3),
    node('z', [], 'other\n', 0.0),
  ].join('\n');
  const summary = JSON.stringify({
    selection: { nodeId: 'c' },
    stopReason: 'max_generations',
    generations: [
      {
        generation: 1,
        evaluations: 3,
        elapsedMs: 10,
        islands: [{ best: 0.3, mean: 0.2, size: 2 }],
      },
    ],
  });
  const v = evolveView(summary, journal);
  expect(v.lineage.map((n) => n.id)).toEqual(['a', 'b', 'c']);
  expect(v.lineage[0]?.diffFromParent).toBe('');
  expect(v.lineage[2]?.diffFromParent).toContain('+y = 3');
  expect(v.generations).toHaveLength(1);
  expect(v.summary['stopReason']).toBe('max_generations');
  expect(evolveView(summary, undefined).lineage).toEqual([]);
});

test('a conversation record (the agents export) becomes model, tool call and result steps', () => {
  const record = {
    messages: [
      { role: 'system', content: 'you fix bugs' },
      { role: 'user', content: 'fix lru' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: { name: 'write_file', arguments: '{"path":"lru.py"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'wrote 10 lines' },
      { role: 'assistant', content: 'done' },
    ],
    metadata: { sessionId: 'sess-1', runs: [] },
  };
  const v = trajectoryView(JSON.stringify(record), 0.004);
  expect(v.sessions).toEqual(['sess-1']);
  expect(v.steps.map((s) => s.type)).toEqual([
    'message',
    'message',
    'model_call',
    'tool_call',
    'tool_result',
    'model_call',
  ]);
  expect(v.steps[4]).toMatchObject({ tool: 'write_file' });
  // No per-call cost in the record: the task's cost is spread over its model calls, and says so.
  expect(v.steps[2]).toMatchObject({ costUsd: 0.002, costEstimated: true });
  expect(v.totalCostUsd).toBeCloseTo(0.004);
});

test('the subagent tree: nested calls, a subagent named only by a call, no cycles', () => {
  const step = (sessionId: string, seq: number, child?: string) =>
    JSON.stringify({
      sessionId,
      seq,
      epoch: 1,
      runId: 'r',
      atMs: seq,
      type: 'tool_call',
      data: child ? { name: 'call_subagent', subagentSessionId: child } : { name: 'view_file' },
    });
  const v = trajectoryView(
    [
      step('root', 1, 'a'),
      step('a', 2, 'b'),
      step('b', 3, 'root'), // a call back to the root does not make it anyone's child
      step('b', 4, 'a'), // nor an ancestor the child of its descendant
      step('root', 5, 'c'), // c has no steps of its own in the file
      step('c', 6),
    ].join('\n'),
  );
  expect(v.sessions).toEqual(['root', 'a', 'b', 'c']);
  expect(v.parents).toEqual({ root: null, a: 'root', b: 'a', c: 'root' });
  const only = trajectoryView(step('root', 1, 'ghost'));
  expect(only.sessions).toEqual(['root', 'ghost']);
  expect(only.parents).toEqual({ root: null, ghost: 'root' });
});

test('a first load asks for the last events of a job: ?tail= is 1 to 10,000', () => {
  expect(eventTail(null)).toBe(0);
  expect(eventTail('500')).toBe(500);
  for (const bad of ['0', '-1', '10001', 'x', '1.5', '']) {
    expect(() => eventTail(bad)).toThrow(/tail: must be an integer from 1 to 10000/);
  }
});
