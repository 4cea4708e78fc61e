import path from 'node:path';
import { type JobEventRecord } from '@troupe/coordinator';
import { LlmClient, ModelRegistry } from '@troupe/llm';
import { errorCode } from '@troupe/proto';
import { FakeOpenAI } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { createDesktopTasksDriver } from '../../src';

// The desktop-tasks driver's model agent against FakeOpenAI (the only fake), on a real desktop
// environment (Docker, Xvfb, mousepad) hosted by a real node agent: the scripted model clicks
// into the editor, types "approved", saves and says DONE on both tasks; the task that wants
// "approved" passes and the one that wants "rejected" fails, since the evaluator reads the file,
// not the agent's DONE. Every model call goes through the cluster's LlmClient with the
// screenshot as an image part.

jest.setTimeout(600_000);

const SUITE = path.resolve(__dirname, 'desktop-fixtures/click-type');

let fake: FakeOpenAI;
let tc: TestCluster;

beforeAll(async () => {
  fake = await FakeOpenAI.start({ models: ['fake-cua'] });
  const models = new ModelRegistry({
    models: {
      cua: { baseURL: fake.baseURL, model: 'fake-cua', inputUsdPer1M: 10, outputUsdPer1M: 0 },
    },
  });
  const client = new LlmClient({ registry: models, retry: { maxAttempts: 1 } });
  tc = await TestCluster.start({
    coordinator: { drivers: [createDesktopTasksDriver({ models: { client, models } })] },
    nodeAgent: {},
  });
});

afterAll(async () => {
  await tc?.stop();
  await fake?.close();
});

const SCRIPT = [
  // Mousepad opens centred (640×480 on 1280×800): the screen's centre is in its text area.
  { action_type: 'CLICK', x: 640, y: 400 },
  { action_type: 'TYPING', text: 'approved' },
  { action_type: 'HOTKEY', keys: ['ctrl', 's'] },
  { action_type: 'DONE' },
];

test('a scripted model clicks and types: one task passes, the other fails on the same actions', async () => {
  fake.setHandler((req) => {
    // The step is the number of model turns so far in this conversation.
    const turns = req.body.messages.filter((m) => m.role === 'assistant').length;
    const action = SCRIPT[Math.min(turns, SCRIPT.length - 1)]!;
    return {
      toolCalls: [{ name: 'computer', arguments: action }],
      usage: { prompt_tokens: 1000, completion_tokens: 20 },
    };
  });
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'desktop-tasks',
      concurrency: 1,
      taskTimeoutMs: 500_000,
      // A setup step that times out on a loaded host is an infrastructure failure: retried, as
      // the shipped jobs do, so only the agent's outcome decides the verdicts below.
      retries: { max: 1, backoffMs: 1000 },
      config: { agent: { kind: 'model', model: 'cua', maxSteps: 6 } },
      tasks: { suite: SUITE },
    },
  });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(550_000) })) {
    events.push(e);
  }
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  const byId = Object.fromEntries(results.tasks.map((t) => [t.taskId, t]));
  // With the error text, so an infrastructure failure says what it was: a task redone after
  // one (a setup timeout on a loaded host) keeps that attempt's error, per the TaskResult
  // contract; a task done at its first attempt has none.
  for (const [id, status] of [
    ['approve', 'TASK_PASSED'],
    ['reject', 'TASK_FAILED'],
  ] as const) {
    const t = byId[id]!;
    expect(t.status).toBe(status);
    if (t.attempts > 1) expect(t.error).not.toBe('');
    else expect(t.error).toBe('');
  }
  expect(byId['approve']?.details).toMatchObject({
    lastAction: 'DONE',
    steps: 4,
    value: 'approved',
  });
  expect(byId['reject']?.details).toMatchObject({
    lastAction: 'DONE',
    steps: 4,
    value: 'approved',
  });
  // Four model turns a task, priced by the registry ($10 per million prompt tokens).
  expect(byId['approve']?.costUsd).toBeCloseTo(0.04, 6);

  // Four turns a task (more if an attempt was retried).
  const requests = fake.chatRequests;
  expect(requests.length).toBeGreaterThanOrEqual(8);
  for (const req of requests) {
    expect(req.body.model).toBe('fake-cua');
    expect(req.body.tools?.map((t) => (t.type === 'function' ? t.function.name : t.type))).toEqual([
      'computer',
    ]);
    const last = req.body.messages.at(-1)!;
    expect(last.role).toBe('user');
    const parts = last.content as { type: string; image_url?: { url: string } }[];
    expect(parts[1]?.image_url?.url).toMatch(/^data:image\/png;base64,iVBOR/);
  }
});

test('a model the cluster does not have is refused at submission, naming the field', async () => {
  const err = await tc.coordinator
    .jobs!.submit({
      spec: {
        kind: 'desktop-tasks',
        config: { agent: { kind: 'model', model: 'gpt-nope' } },
        tasks: { suite: SUITE },
      },
    })
    .catch((e: unknown) => e);
  expect(errorCode(err)).toBe('INVALID_ARGUMENT');
  expect(String(err)).toContain('spec.config.agent.model');
  expect(String(err)).toContain('cua');
});
