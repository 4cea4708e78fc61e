import { createShellTasksDriver, registerBuiltinDrivers } from '@troupe/benchmarks';
import { DriverRegistry, parseJobSpec } from '@troupe/coordinator';
import { noopLogger } from '@troupe/actors';

const driver = createShellTasksDriver();
const planCtx = { jobId: 'j1', signal: new AbortController().signal, log: noopLogger };

describe('shell-tasks driver', () => {
  it('expands a generator, numbering ids and commands', async () => {
    const spec = parseJobSpec({
      kind: 'shell-tasks',
      tasks: { count: 3, command: 'echo {i}', idPrefix: 'n' },
      config: { memoryMb: 64 },
    });
    driver.validate(spec);
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
  ])('names the field: %j', (over, expected) => {
    const spec = parseJobSpec({ kind: 'shell-tasks', ...over });
    expect(() => driver.validate(spec)).toThrow(expected);
  });

  it('is registered by registerBuiltinDrivers, with evolve, issue-resolution and desktop-tasks', () => {
    expect(registerBuiltinDrivers(new DriverRegistry()).names()).toEqual([
      'desktop-tasks',
      'evolve',
      'issue-resolution',
      'shell-tasks',
    ]);
  });
});
