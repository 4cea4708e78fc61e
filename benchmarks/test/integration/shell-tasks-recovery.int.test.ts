import { noopLogger } from '@troupe/actors';
import { errorCode, TroupeError } from '@troupe/proto';
import {
  createShellTasksDriver,
  shellSandboxId,
  type ShellTaskInput,
  ShellTaskInputSchema,
} from '@troupe/benchmarks';
import { parseJobSpec, type TaskArtifacts, type TaskContext } from '@troupe/coordinator';
import { sandboxRef } from '@troupe/node-agent';
import { waitFor } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';

// A fault (a crashed coordinator, a node agent that stopped answering, a partition) can end a
// task's execution after its command exited and before its outcome was recorded. The retry must
// not run the command again: the earlier execution's sandbox recorded how the command ended, in
// its persisted state, and the shell-tasks driver reads it from there. Real NATS, a real node
// agent and Docker; the task contexts are the ones the task actor would build for the retries.

jest.setTimeout(300_000);

let tc: TestCluster;
const driver = createShellTasksDriver();
// Each run prints a fresh random id: equal output means the same run.
const spec = parseJobSpec({
  kind: 'shell-tasks',
  config: { saveOutput: false },
  tasks: [{ id: 't0', command: 'cat /proc/sys/kernel/random/uuid' }],
});

beforeAll(async () => {
  tc = await TestCluster.start({ docker: true, actors: true });
  await tc.startNodeAgent({ hostId: 'recovery-agent', slots: { sandbox: 4 } });
});

afterAll(async () => {
  await tc?.stop();
});

const noArtifacts: TaskArtifacts = {
  pathOf: (name) => `tasks/t0/${name}`,
  adopt: (name) => `tasks/t0/${name}`,
  put: () => Promise.reject(new Error('no artifacts in this test')),
};

function context(
  resourceId: string,
  earlierResourceIds: string[],
  more: Partial<TaskContext> = {},
): TaskContext {
  return {
    jobId: 'j-recovery',
    taskId: 't0',
    index: 0,
    attempt: earlierResourceIds.length + 1,
    spec,
    signal: AbortSignal.timeout(120_000),
    deadlineUnixMs: Date.now() + 120_000,
    refs: tc.actors,
    log: noopLogger,
    hostId: 'test',
    execution: 1,
    resourceId,
    staleResourceIds: [],
    earlierResourceIds,
    interrupted: () => false,
    artifacts: noArtifacts,
    progress: () => undefined,
    ...more,
  };
}

async function input(): Promise<ShellTaskInput> {
  const plan = await driver.plan(spec, {
    jobId: 'j-recovery',
    signal: AbortSignal.timeout(10_000),
    log: noopLogger,
    payloadPrefix: 'jobs/j-recovery/payload/',
  });
  return ShellTaskInputSchema.parse(plan[0]!.input);
}

const statusOf = (resourceId: string) =>
  sandboxRef(tc.actors, shellSandboxId(resourceId)).ask('status', {}, { timeoutMs: 15_000 });

test('a command that exited before its execution failed is not run again by the retry', async () => {
  const task = await input();
  const first = await driver.runTask(context('rec-a1', []), task);
  expect(first).toMatchObject({ exitCode: 0, timedOut: false });
  expect(first.recoveredFrom).toBeUndefined();
  expect(first.stdout).toMatch(/^[0-9a-f-]{36}\n$/);
  // The attempt then failed on infrastructure, and its cleanup with it: the sandbox is left.
  expect((await statusOf('rec-a1')).status).toBe('ready');

  const retry = await driver.runTask(context('rec-a2', ['rec-a1']), task);
  expect(retry).toMatchObject({ exitCode: 0, stdout: first.stdout, recoveredFrom: 'rec-a1' });
  // The retry read the earlier attempt's sandbox, then removed it.
  expect((await statusOf('rec-a1')).status).toBe('destroyed');
  // The retry never created a sandbox of its own.
  expect((await statusOf('rec-a2')).status).toBe('new');
  const grade = await driver.grade(context('rec-a2', ['rec-a1']), task, retry);
  expect(grade).toMatchObject({ passed: true, details: { recoveredFrom: 'rec-a1' } });
});

test('a command that ended unobserved is recorded by status and kept after destroy', async () => {
  const sb = sandboxRef(tc.actors, shellSandboxId('rec-b1'));
  await sb.ask('create', { spec: { image: 'troupe-busybox:latest' } }, { timeoutMs: 120_000 });
  const { taskId } = await sb.ask('startBackground', { cmd: 'echo quiet; exit 3' });
  // Nobody waits on the command: `status` looks at it, and records it once it has ended.
  const ended = await waitFor(
    async () => (await statusOf('rec-b1')).commands.find((c) => c.ended)?.ended,
    { timeoutMs: 30_000, message: 'the unobserved command recorded as ended' },
  );
  expect(ended).toMatchObject({ state: 'exited', exitCode: 3, stdout: 'quiet\n' });
  await sb.ask('destroy', {}, { timeoutMs: 30_000 });
  const after = await statusOf('rec-b1');
  expect(after.status).toBe('destroyed');
  expect(after.commands).toEqual([expect.objectContaining({ taskId, ended })]);
});

test('a command its sandbox was destroyed under did not finish: the retry runs it', async () => {
  const task = await input();
  const sb = sandboxRef(tc.actors, shellSandboxId('rec-c1'));
  await sb.ask('create', { spec: { image: 'troupe-busybox:latest' } }, { timeoutMs: 120_000 });
  const { taskId } = await sb.ask('startBackground', { cmd: 'sleep 600' });
  await sb.ask('destroy', {}, { timeoutMs: 30_000 });
  const killed = await statusOf('rec-c1');
  // Killed by the destroy, and recorded so: not an end of its own.
  expect(killed.commands.map((c) => [c.taskId, c.ended?.state, c.ended?.exitCode])).toEqual([
    [taskId, 'killed', 137],
  ]);

  const retry = await driver.runTask(context('rec-c2', ['rec-c1']), task);
  expect(retry.recoveredFrom).toBeUndefined();
  expect(retry).toMatchObject({ exitCode: 0, stdout: expect.stringMatching(/^[0-9a-f-]{36}\n$/) });
  expect((await statusOf('rec-c2')).status).toBe('ready');
  await driver.cleanup!(context('rec-c2', ['rec-c1']), task);
});

test('a destroyed sandbox answers status asks sent back to back', async () => {
  // Each turn of a sandbox with no container ends with a passivation: the next ask reaches the
  // activation on its way out and must wait for it rather than give up.
  const sb = sandboxRef(tc.actors, shellSandboxId('rec-d1'));
  await sb.ask('destroy', {}, { timeoutMs: 30_000 });
  for (let i = 0; i < 40; i++) {
    expect((await sb.ask('status', {}, { timeoutMs: 15_000 })).status).toBe('new');
  }
});

test('a command still running in an interrupted execution is waited for, not started again', async () => {
  // The execution that started the command was interrupted (its task actor's host died) while
  // the command ran; the replay of the attempt finds it running in that sandbox.
  const slow = parseJobSpec({
    kind: 'shell-tasks',
    config: { saveOutput: false },
    tasks: [{ id: 't0', command: 'sleep 4; cat /proc/sys/kernel/random/uuid' }],
  });
  const plan = await driver.plan(slow, {
    jobId: 'j-recovery',
    signal: AbortSignal.timeout(10_000),
    log: noopLogger,
    payloadPrefix: 'jobs/j-recovery/payload/',
  });
  const task = ShellTaskInputSchema.parse(plan[0]!.input);
  const sb = sandboxRef(tc.actors, shellSandboxId('rec-e1'));
  await sb.ask('create', { spec: { image: 'troupe-busybox:latest' } }, { timeoutMs: 120_000 });
  const { taskId } = await sb.ask('startBackground', { cmd: task.task.command });
  const said: string[] = [];
  const log = {
    ...noopLogger,
    info: (_obj: object, msg?: string) => void said.push(msg ?? ''),
    child: () => log,
  };

  const replay = await driver.runTask(
    context('rec-e2', ['rec-e1'], { spec: slow, staleResourceIds: ['rec-e1'], log }),
    task,
  );
  expect(said).toContain(
    'the command is still running in an earlier execution: waiting for it there',
  );
  expect(replay).toMatchObject({ exitCode: 0, recoveredFrom: 'rec-e1' });
  // The output is the one run's: the sandbox recorded it, and no second sandbox was made.
  const earlier = await statusOf('rec-e1');
  expect(earlier.status).toBe('destroyed');
  expect(earlier.commands).toEqual([
    expect.objectContaining({ taskId, ended: expect.objectContaining({ stdout: replay.stdout }) }),
  ]);
  expect((await statusOf('rec-e2')).status).toBe('new');
});

// Chaos seed 8328: a retry could not read its earlier execution's sandbox (its activations kept
// leaving, "is passivating", past the read's wait), skipped it and ran the command a second
// time, though the sandbox had recorded the command's exit. The attempt now fails, retryable,
// and creates nothing; the job's next attempt reads the sandbox again.
test('a retry that cannot read an earlier sandbox fails retryable instead of running again', async () => {
  const task = await input();
  const first = await driver.runTask(context('rec-f1', []), task);
  expect(first).toMatchObject({ exitCode: 0 });
  // Every ask to the earlier sandbox meets an activation on its way out.
  const unreadable = shellSandboxId('rec-f1');
  let refused = 0;
  const refs = {
    ref: tc.actors.ref.bind(tc.actors),
    refOf: (addr: Parameters<typeof tc.actors.refOf>[0]) => {
      const real = tc.actors.refOf(addr);
      if (addr.id !== unreadable) return real;
      const moving = Object.create(real) as typeof real;
      moving.withHints = () => moving;
      moving.ask = () => {
        refused++;
        return Promise.reject(
          new TroupeError('UNAVAILABLE', `sandbox/${unreadable} is passivating`, {
            details: { moved: true },
          }),
        );
      };
      return moving;
    },
  } as typeof tc.actors;
  const quick = createShellTasksDriver({ movedWaitMs: 300 });
  const err = await quick
    .runTask(context('rec-f2', ['rec-f1'], { refs }), task)
    .catch((e: unknown) => e);
  expect(errorCode(err)).toBe('UNAVAILABLE');
  expect((err as TroupeError).retryable).toBe(true);
  expect((err as Error).message).toMatch(/could not read the sandbox of an earlier execution/);
  expect(refused).toBeGreaterThan(0);
  // Nothing ran: the retry made no sandbox of its own, and the earlier one is as it was.
  expect((await statusOf('rec-f2')).status).toBe('new');
  const earlier = await statusOf('rec-f1');
  expect(earlier.status).toBe('ready');
  expect(earlier.commands.filter((c) => c.ended?.state === 'exited')).toHaveLength(1);
  // Readable again, the next attempt recovers the first run's result.
  const retry = await driver.runTask(context('rec-f3', ['rec-f1', 'rec-f2']), task);
  expect(retry).toMatchObject({ exitCode: 0, stdout: first.stdout, recoveredFrom: 'rec-f1' });
});

// Chaos seed 46014: a coordinator stopped for a second had its task actor fenced while the
// command ran. The new activation found the command running in that execution's sandbox and
// waited for it there; the fenced execution, still running its turn, then killed the command
// (its signal had aborted) and its cleanup removed the sandbox. The replay read the kill, 137,
// as the command's end and graded it failed. An interrupted execution now leaves both alone.
test('an interrupted execution leaves its running command to the replay, which grades it', async () => {
  const slow = parseJobSpec({
    kind: 'shell-tasks',
    config: { saveOutput: false },
    tasks: [{ id: 't0', command: 'sleep 3; cat /proc/sys/kernel/random/uuid' }],
  });
  const plan = await driver.plan(slow, {
    jobId: 'j-recovery',
    signal: AbortSignal.timeout(10_000),
    log: noopLogger,
    payloadPrefix: 'jobs/j-recovery/payload/',
  });
  const task = ShellTaskInputSchema.parse(plan[0]!.input);
  const fence = new AbortController();
  const fenced = { spec: slow, signal: fence.signal, interrupted: () => fence.signal.aborted };
  const first = driver.runTask(context('rec-g1', [], fenced), task).catch((e: unknown) => e);
  await waitFor(async () => (await statusOf('rec-g1')).commands.length === 1, {
    timeoutMs: 60_000,
    message: 'the first execution started its command',
  });
  fence.abort(new TroupeError('CANCELLED', 'job-task/x was fenced by a newer activation'));
  expect(errorCode(await first)).toBe('CANCELLED');
  await driver.cleanup!(context('rec-g1', [], fenced), task);
  // Left running, in its sandbox.
  const left = await statusOf('rec-g1');
  expect(left.status).toBe('ready');
  expect(left.commands).toEqual([expect.not.objectContaining({ ended: expect.anything() })]);

  const replay = await driver.runTask(
    context('rec-g2', ['rec-g1'], { spec: slow, staleResourceIds: ['rec-g1'] }),
    task,
  );
  expect(replay).toMatchObject({ exitCode: 0, recoveredFrom: 'rec-g1' });
  expect(replay.stdout).toMatch(/^[0-9a-f-]{36}\n$/);
  expect((await statusOf('rec-g1')).status).toBe('destroyed');
  expect((await statusOf('rec-g2')).status).toBe('new');
});
