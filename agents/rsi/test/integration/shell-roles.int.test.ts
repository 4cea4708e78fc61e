import { randomUUID } from 'node:crypto';
import { ActorSystem } from '@troupe/actors';
import { createAgentActor, TrajectoryStore } from '@troupe/agents';
import { LlmClient, ModelRegistry } from '@troupe/llm';
import { type ChatRequest, FakeOpenAI, type FakeCompletion } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { MemoryBank } from '../../src/bank/memory-bank';
import { runTarget, type TargetLoopEvent } from '../../src/loop/target-loop';
import { type RsiBank, rsiBank, ShellRsiRoles } from '../../src/shell/shell-roles';
import { parseShellTask, type ShellTaskInput } from '../../src/shell/shell-task';

// RSIAgent's roles on shell sandboxes end to end: a real nats-server, coordinator and node agent
// (Docker sandboxes), an agent host running the `agent` actor; the model behind every role is
// the testkit's FakeOpenAI (the only fake), scripted per role. The scripts react to what the
// tools return (the Verifier reads the machine and routes on what it finds), so a machine that
// does not hold what the Actor claims changes the verdict.

jest.setTimeout(240_000);

let fake: FakeOpenAI;
let tc: TestCluster;
let host: ActorSystem;
let trajectories: TrajectoryStore;

beforeAll(async () => {
  fake = await FakeOpenAI.start();
  // Each role's model is its own registry entry, as a job spec names them.
  const model = () => ({
    baseURL: fake.baseURL,
    model: 'fake-model',
    inputUsdPer1M: 0,
    outputUsdPer1M: 0,
    maxTokens: 512,
  });
  const registry = new ModelRegistry({
    models: { actor: model(), verifier: model(), curriculum: model() },
  });
  tc = await TestCluster.start({ nodeAgent: { slots: { sandbox: 4, evaluator: 0 } } });
  trajectories = new TrajectoryStore({ connection: tc.nc, cluster: tc.cluster });
  host = await ActorSystem.start({
    cluster: tc.cluster,
    connection: tc.nc,
    hostId: `agents-${tc.cluster.slice(-6)}`,
    hosting: [
      createAgentActor({
        llm: new LlmClient({ registry, retry: { maxAttempts: 1 } }),
        trajectories,
      }),
    ],
    placement: 'none',
  });
  await tc.waitForHost(host.hostId);
}, 180_000);

afterAll(async () => {
  await host?.shutdown({ graceMs: 1_000 }).catch(() => undefined);
  await tc?.stop();
  await fake?.close();
});

// --- the scripted model -------------------------------------------------------------------

type Role = 'actor' | 'verifier' | 'curriculum';
type Msg = { role: string; content?: unknown; tool_calls?: unknown[] };

function roleOf(req: ChatRequest): Role {
  const system = String((req.body.messages[0] as Msg).content);
  if (system.startsWith('You are the Actor')) return 'actor';
  if (system.startsWith('You are the Verifier')) return 'verifier';
  if (system.startsWith('You are the Curriculum')) return 'curriculum';
  throw new Error(`unknown role: ${system.slice(0, 60)}`);
}

/** The run's task text (the last user message) and the tool results since, in order. */
function currentRun(req: ChatRequest): { task: string; results: string[]; turn: number } {
  const messages = req.body.messages as Msg[];
  let last = 0;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  return {
    task: String(messages[last]?.content),
    results: messages
      .slice(last + 1)
      .flatMap((m) => (m.role === 'tool' ? [String(m.content)] : [])),
    turn: messages.filter((m) => m.role === 'user').length,
  };
}

const call = (name: string, args: Record<string, unknown>): FakeCompletion => ({
  toolCalls: [{ name, arguments: args }],
});
const sh = (command: string) => call('run_terminal_command', { command });
const finish = (summary: string) => call('finish_task', { summary });

/** A step-indexed script: the n-th reply of a run is `steps[n]`, or a function of the results. */
type Step = FakeCompletion | ((results: string[]) => FakeCompletion);
function step(steps: Step[], results: string[]): FakeCompletion {
  const s = steps[results.length];
  if (s === undefined) throw new Error(`the script has no step ${results.length}`);
  return typeof s === 'function' ? s(results) : s;
}

/** Installs a handler: `pick(role, run)` gives the steps of that run. */
function script(pick: (role: Role, run: ReturnType<typeof currentRun>) => Step[]): void {
  fake.setHandler((req) => {
    const role = roleOf(req);
    const run = currentRun(req);
    return step(pick(role, run), run.results);
  });
}

const isLearning = (task: string) => task.includes('Propose what it should keep');
const isPractice = (task: string) => task.includes('Practice project in');

// --- helpers ------------------------------------------------------------------------------

const BANK_SECRET = 'BANKTEXT-7f3a: prefer printf over echo -e';

function bank0(): RsiBank {
  return rsiBank(MemoryBank.create({ 'lessons/shell.md': `${BANK_SECRET}\n` }));
}

function rolesFor(jobId: string, task: ShellTaskInput) {
  return new ShellRsiRoles({
    system: host,
    trajectories,
    jobId,
    task: parseShellTask(task),
    models: { actor: 'actor', verifier: 'verifier', curriculum: 'curriculum' },
  });
}

function requestsSince(start: number): { role: Role; req: ChatRequest }[] {
  return fake.chatRequests.slice(start).map((req) => ({ role: roleOf(req), req }));
}

/**
 * The Verifier never sees the Actor's messages or the bank: no Verifier request contains any
 * text an Actor request's assistant messages carried (contents and tool-call arguments), any
 * bank file's content or any bank path.
 */
function expectVerifierIsolated(start: number, banks: RsiBank[]): number {
  const reqs = requestsSince(start);
  const actorTexts = new Set<string>();
  for (const { role, req } of reqs) {
    if (role !== 'actor') continue;
    for (const m of req.body.messages as Msg[]) {
      if (m.role !== 'assistant') continue;
      if (typeof m.content === 'string' && m.content.length > 0) actorTexts.add(m.content);
      for (const tc of (m.tool_calls ?? []) as { function: { arguments: string } }[]) {
        actorTexts.add(tc.function.arguments);
      }
    }
  }
  const bankTexts = new Set<string>();
  for (const b of banks) {
    for (const path of b.bank.paths) {
      bankTexts.add(path);
      bankTexts.add(b.bank.readText(path)?.trim() ?? '');
    }
  }
  expect(actorTexts.size).toBeGreaterThan(0);
  let verifierRequests = 0;
  for (const { role, req } of reqs) {
    if (role !== 'verifier') continue;
    verifierRequests++;
    const body = JSON.stringify(req.body.messages);
    for (const t of actorTexts)
      expect({ verifierSaw: body.includes(JSON.stringify(t).slice(1, -1)) ? t : null }).toEqual({
        verifierSaw: null,
      });
    for (const t of bankTexts)
      expect({ verifierSaw: t !== '' && body.includes(t) ? t : null }).toEqual({
        verifierSaw: null,
      });
  }
  return verifierRequests;
}

// --- tests --------------------------------------------------------------------------------

test('PASS: the Actor writes the file and says DONE, the Verifier checks it and hands off; the lesson is in the output bank', async () => {
  const start = fake.chatRequests.length;
  const jobId = `job-${randomUUID().slice(0, 8)}`;
  const roles = rolesFor(jobId, {
    id: 'greet',
    instruction: 'Write the word hello, alone on one line, into greeting.txt.',
    setup: { files: { 'README.txt': 'greeting task\n' } },
    evaluator: 'grep -qx hello greeting.txt',
  });
  script((role, run) => {
    if (role === 'actor' && isLearning(run.task)) {
      return [
        call('write_file', {
          path: '/proposal/lessons/greeting.md',
          content: 'Write files with printf and check them with cat.\n',
        }),
        finish('one lesson on writing files'),
      ];
    }
    if (role === 'actor') {
      return [
        call('view_file', { path: '/bank/lessons/shell.md' }),
        sh("printf 'hello\\n' > greeting.txt && cat greeting.txt"),
        finish('DONE\nACTOR-SAYS-1: wrote greeting.txt with printf'),
      ];
    }
    if (role === 'verifier') {
      return [
        // It tries to read the bank too (by a glob: naming a bank path would leak it into
        // this very check): the bank is gone from the machine.
        sh('cat greeting.txt; ls -A /bank; cat /bank/*/*'),
        (r) =>
          /--- stdout ---\nhello\n/.test(r[0] ?? '')
            ? finish('HANDOFF\ngreeting.txt holds exactly "hello"')
            : finish(`EVOLVE\ngreeting.txt does not hold hello: ${r[0]}`),
      ];
    }
    throw new Error(`no ${role} expected`);
  });
  const events: TargetLoopEvent[] = [];
  const input = bank0();
  const result = await runTarget('greet', input, roles, {
    stopPolicy: 'verifier_pass',
    onEvent: (e) => events.push(e),
  });
  expect(result).toMatchObject({ status: 'passed', verdict: 'PASS', refusedPublications: 0 });
  expect(result.attempts.map((a) => a.verdict)).toEqual(['PASS']);
  expect(result.attempts[0]?.learningRefused).toBeUndefined();
  expect(result.bank.bank.paths).toEqual(['lessons/greeting.md', 'lessons/shell.md']);
  expect(result.bank.bank.readText('lessons/greeting.md')).toBe(
    'Write files with printf and check them with cat.\n',
  );
  expect(result.bank.hash).not.toBe(input.hash);
  expect(events.map((e) => e.type)).toEqual(['attempt', 'verdict', 'learned']);

  const reqs = requestsSince(start);
  // The Actor read the installed bank from /bank.
  const actorFirst = reqs.find((r) => r.role === 'actor');
  expect(String((actorFirst?.req.body.messages[1] as Msg).content)).toContain(
    '/bank/lessons/shell.md (',
  );
  const actorReads = reqs.filter((r) => r.role === 'actor').map((r) => JSON.stringify(r.req.body));
  expect(actorReads.some((b) => b.includes(BANK_SECRET))).toBe(true);
  // The Verifier found /bank empty: its cat failed.
  const verifierLast = reqs.filter((r) => r.role === 'verifier').at(-1);
  expect(currentRun(verifierLast!.req).results[0]).toMatch(/No such file or directory/);
  // The lesson run continued the Actor's own session: its earlier messages are in the context.
  const learning = reqs.filter((r) => r.role === 'actor' && isLearning(currentRun(r.req).task));
  expect(JSON.stringify(learning[0]?.req.body.messages)).toContain('ACTOR-SAYS-1');
  expect(expectVerifierIsolated(start, [input, result.bank])).toBe(2);
  // Every sandbox was destroyed.
  expect(await tc.containers()).toEqual([]);
});

test('FAIL → lessons → Curriculum project with fixtures → practice in its own sandbox → READY → a fresh attempt passes', async () => {
  const start = fake.chatRequests.length;
  const jobId = `job-${randomUUID().slice(0, 8)}`;
  const roles = rolesFor(jobId, {
    id: 'count',
    instruction: 'Write the number of lines of data.csv into count.txt (just the number).',
    setup: { files: { 'data.csv': 'a,1\nb,2\nc,3\n' } },
    evaluator: 'test "$(cat count.txt)" = 3',
  });
  const project = {
    decision: 'project',
    root: 'practice/p1',
    body: 'Write the number of lines of practice/p1/in.txt into practice/p1/count.txt.',
    fixtures: { 'practice/p1/in.txt': 'x\ny\n' },
  };
  const verifierOn = (file: string, want: string): Step[] => [
    sh(`cat ${file}; ls -A /bank`),
    (r) =>
      new RegExp(`--- stdout ---\\n\\s*${want}\\n`).test(r[0] ?? '')
        ? finish(`HANDOFF\n${file} holds ${want}`)
        : finish(`EVOLVE\n${file} does not hold ${want}: ${r[0]}`),
  ];
  script((role, run) => {
    if (role === 'actor' && isLearning(run.task)) {
      if (run.task.includes('(verdict FAIL)')) {
        return [
          call('write_file', {
            path: '/proposal/lessons/count.md',
            content: 'Count lines with wc -l < file.\n',
          }),
          finish('lesson: wc -l'),
        ];
      }
      // After a PASS: keep the lesson, delete nothing, refine nothing.
      return [finish('nothing new')];
    }
    if (role === 'actor' && isPractice(run.task)) {
      return [
        call('view_file', { path: '/bank/lessons/count.md' }),
        sh('wc -l < practice/p1/in.txt > practice/p1/count.txt'),
        finish('DONE\npractised wc -l'),
      ];
    }
    if (role === 'actor' && run.task.includes('/bank/lessons/count.md')) {
      return [
        sh('ls practice 2>&1; wc -l < data.csv > count.txt'),
        finish('DONE\ncounted with wc -l'),
      ];
    }
    if (role === 'actor') return [finish('EVOLVE\nACTOR-SAYS-2: I do not know how to count lines')];
    if (role === 'verifier' && run.task.includes('The project lies in')) {
      return verifierOn('practice/p1/count.txt', '2');
    }
    if (role === 'verifier') return verifierOn('count.txt', '3');
    // Curriculum: a project first, READY once it was practised.
    return run.task.includes('Practice so far')
      ? [finish('{"decision":"READY"}')]
      : [finish(JSON.stringify(project))];
  });
  const events: TargetLoopEvent[] = [];
  const input = bank0();
  const result = await runTarget('count', input, roles, {
    stopPolicy: 'verifier_pass',
    onEvent: (e) => events.push(e),
  });
  expect(result).toMatchObject({ status: 'passed', verdict: 'PASS', refusedPublications: 0 });
  expect(result.attempts.map((a) => [a.attempt, a.verdict])).toEqual([
    [1, 'FAIL'],
    [2, 'PASS'],
  ]);
  // The FAIL's lesson was installed before practice; practice and the PASS left it as it was.
  expect(result.attempts[0]?.bankAfter).not.toBe(input.hash);
  expect(result.projects).toHaveLength(1);
  expect(result.projects[0]).toMatchObject({
    index: 1,
    verdict: 'PASS',
    bankBefore: result.attempts[0]?.bankAfter,
    publication: { root: 'practice/p1' },
  });
  expect(result.bank.bank.readText('lessons/count.md')).toBe('Count lines with wc -l < file.\n');
  expect(events.map((e) => e.type)).toEqual([
    'attempt',
    'verdict',
    'learned',
    'curriculum',
    'verdict',
    'learned',
    'project',
    'curriculum',
    'attempt',
    'verdict',
    'learned',
  ]);

  const reqs = requestsSince(start);
  // The practice Verifier read the fixture-derived count in the practice sandbox; the fresh
  // target attempt ran in another sandbox, where the practice tree does not exist.
  const freshAttempt = reqs.filter(
    (r) =>
      r.role === 'actor' &&
      currentRun(r.req).task.includes('Task:\nWrite the number of lines of data.csv') &&
      currentRun(r.req).results.length === 1,
  );
  expect(freshAttempt.at(-1) && currentRun(freshAttempt.at(-1)!.req).results[0]).toMatch(
    /No such file or directory/,
  );
  // The second Curriculum turn is the same session: it carries the first turn and the outcome.
  const curriculum = reqs.filter((r) => r.role === 'curriculum');
  expect(curriculum).toHaveLength(2);
  const second = JSON.stringify(curriculum[1]?.req.body.messages);
  expect(second).toContain('practice/p1/in.txt');
  expect(second).toContain('Project 1: root practice/p1');
  expect(second).toContain('verdict: PASS');
  expect(currentRun(curriculum[0]!.req).task).toContain('count.txt does not hold 3');
  // No role prompt carries the evaluator.
  for (const { req } of reqs)
    expect(JSON.stringify(req.body)).not.toContain('test "$(cat count.txt)"');
  expect(expectVerifierIsolated(start, [input, result.bank])).toBe(6);
  expect(await tc.containers()).toEqual([]);
});

test('a malformed Curriculum reply goes back with the corrective message; STALLED leads to one final attempt', async () => {
  const start = fake.chatRequests.length;
  const jobId = `job-${randomUUID().slice(0, 8)}`;
  const roles = rolesFor(jobId, {
    id: 'impossible',
    instruction: 'Write the SHA-1 of the secret into out.txt.',
    evaluator: 'false',
  });
  const replies = [
    'I think the Actor should practise hashing.',
    JSON.stringify({ decision: 'project', root: 'practice/p1', body: 'hash a file', fixtures: {} }),
    JSON.stringify({ decision: 'STALLED', reason: 'the secret is not on the machine' }),
  ];
  script((role, run) => {
    if (role === 'actor' && isLearning(run.task)) return [finish('nothing to keep')];
    if (role === 'actor') return [finish('EVOLVE\nno secret anywhere')];
    if (role === 'verifier') {
      return [sh('cat out.txt'), finish('EVOLVE\nout.txt does not exist')];
    }
    // One persistent session: the turn number is the count of its task messages.
    const reply = replies[run.turn - 1];
    if (reply === undefined) throw new Error(`no Curriculum turn ${run.turn}`);
    return [finish(reply)];
  });
  const events: TargetLoopEvent[] = [];
  const result = await runTarget('impossible', bank0(), roles, {
    stopPolicy: 'verifier_pass',
    onEvent: (e) => events.push(e),
  });
  expect(result).toMatchObject({
    status: 'final_attempt',
    verdict: 'FAIL',
    refusedPublications: 2,
    stalled: 'the secret is not on the machine',
  });
  expect(result.attempts.map((a) => [a.attempt, a.final, a.verdict])).toEqual([
    [1, false, 'FAIL'],
    [2, true, 'FAIL'],
  ]);
  const refusals = events.flatMap((e) => (e.type === 'publication_refused' ? [e.reason] : []));
  expect(refusals).toHaveLength(2);
  expect(refusals[0]).toContain(
    'your reply is not a valid publication: the finish_task summary is not JSON',
  );
  expect(refusals[1]).toBe(
    'practice/p1 was absent, empty, or not replayable: the fixture tree is missing or empty',
  );
  // Each correction went back to the Curriculum, in its next turn of the same session.
  const curriculum = requestsSince(start).filter((r) => r.role === 'curriculum');
  expect(curriculum.map((r) => currentRun(r.req).turn)).toEqual([1, 2, 3]);
  expect(currentRun(curriculum[1]!.req).task).toContain(
    `Your last reply was refused: ${refusals[0]}`,
  );
  expect(currentRun(curriculum[2]!.req).task).toContain(
    `Your last reply was refused: ${refusals[1]}`,
  );
  expect(await tc.containers()).toEqual([]);
});
