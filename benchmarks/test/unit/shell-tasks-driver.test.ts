import { createShellTasksDriver, registerBuiltinDrivers } from '@troupe/benchmarks';
import {
  DriverRegistry,
  MAX_INLINE_TASKS,
  MAX_TASKS_PER_JOB,
  parseJobSpec,
} from '@troupe/coordinator';
import type { TroupeError } from '@troupe/proto';
import { noopLogger } from '@troupe/actors';

const driver = createShellTasksDriver();
const planCtx = {
  jobId: 'j1',
  signal: new AbortController().signal,
  log: noopLogger,
  payloadPrefix: 'jobs/j1/payload/',
};

describe('shell-tasks driver', () => {
  it('accepts allowed secret-looking keys, absolute cwds and known images', () => {
    const spec = parseJobSpec({
      kind: 'shell-tasks',
      config: { allowSecretEnvKeys: ['GH_TOKEN'], image: 'troupe-python:latest' },
      tasks: [
        { id: 'a', command: 'x', env: { GH_TOKEN: 't' }, cwd: '/workspace/sub' },
        { id: 'b', command: 'x', image: 'troupe-busybox' },
        { id: 'c', command: 'x', image: 'alpine:3.20' },
      ],
    });
    expect(() => driver.validate(spec)).not.toThrow();
  });

  it('expands a generator, numbering ids and commands', async () => {
    const spec = parseJobSpec({
      kind: 'shell-tasks',
      tasks: { count: 3, command: 'echo {i}', idPrefix: 'n' },
      config: { memoryMb: 64 },
    });
    await driver.validate(spec);
    const plan = await driver.plan(spec, planCtx);
    expect(plan.map((t) => t.id)).toEqual(['n0', 'n1', 'n2']);
    expect(plan[2]?.input).toMatchObject({
      task: { command: 'echo 2', expectExitCode: 0 },
      config: { image: 'troupe-busybox:latest', memoryMb: 64, saveOutput: true },
    });
  });

  it.each([
    [{ tasks: [{ id: 'a', command: '' }] }, 'spec.tasks[0].command: must not be empty'],
    [{ tasks: [{ id: 'a', command: 'x', bogus: 1 }] }, 'spec.tasks[0]: Unrecognized key: "bogus"'],
    [
      { tasks: [{ id: 'a', command: 'x', files: { '../etc/passwd': 'x' } }] },
      'spec.tasks[0].files',
    ],
    [{ tasks: [{ id: 'a', command: 'x', env: { 'BAD-KEY': 'x' } }] }, 'spec.tasks[0].env'],
    [{ tasks: [], config: { cpus: 0 } }, 'spec.config.cpus: must be >= 0.01'],
    [{ tasks: [], config: { network: 'yes' } }, 'spec.config.network: must be a boolean'],
    [
      { tasks: [{ id: 'a', command: 'x', env: { GH_TOKEN: 'x' } }] },
      '`spec.tasks[0].env.GH_TOKEN`: looks like a secret',
    ],
    [
      { tasks: [{ id: 'a', command: 'x' }], config: { env: { DB_PASSWORD: 'x' } } },
      '`spec.config.env.DB_PASSWORD`: looks like a secret',
    ],
    [
      { tasks: [{ id: 'a', command: 'x', env: { TROUPE_TASK: 'x' } }] },
      '`spec.tasks[0].env.TROUPE_TASK`: the TROUPE_ prefix is reserved',
    ],
    [
      { tasks: [{ id: 'a', command: 'x', cwd: 'sub' }] },
      'spec.tasks[0].cwd: must be an absolute path',
    ],
    [
      { tasks: [{ id: 'a', command: 'x', image: 'troupe-nosuch' }] },
      '`spec.tasks[0].image`: names no image recipe of deploy/images',
    ],
    [
      { tasks: [{ id: 'a', command: 'x' }], config: { image: 'troupe-nosuch:latest' } },
      '`spec.config.image`: names no image recipe',
    ],
    [
      { tasks: [{ id: 'a', command: 'x', image: 'no spaces' }] },
      'spec.tasks[0].image: must be a Docker image reference',
    ],
  ])('names the field: %j', (over, expected) => {
    const spec = parseJobSpec({ kind: 'shell-tasks', ...over });
    expect(() => driver.validate(spec)).toThrow(expected);
  });

  it('refuses an inline task list longer than MAX_INLINE_TASKS before checking its elements', () => {
    // 50,000 wrong elements took ~0.8 s to refuse (one issue each, a 3 MB message).
    const spec = parseJobSpec({
      kind: 'shell-tasks',
      tasks: Array.from({ length: 50_000 }, (_, i) => i),
    });
    let err: TroupeError | undefined;
    try {
      driver.validate(spec) as void;
    } catch (e) {
      err = e as TroupeError;
    }
    expect(err?.code).toBe('INVALID_ARGUMENT');
    expect(err?.details).toEqual({
      field: 'spec.tasks',
      rule: `must hold at most ${MAX_INLINE_TASKS} tasks (got 50000): list at most ${MAX_INLINE_TASKS} inline, or generate them (shell-tasks {count, command}) or split the set into several jobs`,
    });
    // Within the limit, a list of wrong elements is refused with a bounded message.
    const within = parseJobSpec({
      kind: 'shell-tasks',
      tasks: Array.from({ length: 2_000 }, () => 1),
    });
    expect(() => driver.validate(within)).toThrow(/spec\.tasks\[0\]: .* and 1980 more issues$/);
    expect(() =>
      driver.validate(
        parseJobSpec({
          kind: 'shell-tasks',
          tasks: { count: MAX_TASKS_PER_JOB + 1, command: 'x' },
        }),
      ),
    ).toThrow(`spec.tasks.count: must be <= ${MAX_TASKS_PER_JOB}`);
  });

  it('is registered by registerBuiltinDrivers, with evolve, issue-resolution, desktop-tasks, rsi, rollout and skill-sequence', () => {
    expect(registerBuiltinDrivers(new DriverRegistry()).names()).toEqual([
      'desktop-tasks',
      'evolve',
      'issue-resolution',
      'rollout',
      'rsi',
      'shell-tasks',
      'skill-sequence',
    ]);
  });
});
