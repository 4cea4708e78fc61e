import { OutputCapture } from '../../src/internal/output-capture';
import { TaskTable, type TaskHooks, type TaskRun } from '../../src/internal/task-table';

/** A started process whose end the test decides. */
function run(): { run: TaskRun; end: (exitCode: number) => void } {
  let end: (exitCode: number) => void = () => undefined;
  const done = new Promise<{ exitCode: number; endedAt: number }>((resolve) => {
    end = (exitCode) => resolve({ exitCode, endedAt: performance.now() });
  });
  return {
    run: {
      startedAt: performance.now(),
      stdout: new OutputCapture(1_024),
      stderr: new OutputCapture(1_024),
      done,
      detach: () => undefined,
    },
    end,
  };
}

/** A table whose kills end the process with `killedWith` (a signal's code, or its own exit). */
function table(
  killedWith: number,
  proc: ReturnType<typeof run>,
  judgeEnd: TaskHooks['judgeEnd'] = async () => ({ oomKilled: false }),
): TaskTable {
  return new TaskTable('sbx-test', { killTree: async () => proc.end(killedWith), judgeEnd });
}

test('a kill that finds the process going reports how it ended on its own', async () => {
  const proc = run();
  // The command exited 0 as the kill was sent: its end had not reached the table yet.
  const tasks = table(0, proc);
  tasks.add('t1', proc.run);
  expect(tasks.status('t1').state).toBe('running');
  const status = await tasks.kill('t1');
  expect(status).toMatchObject({ state: 'exited', exitCode: 0 });
});

test('a kill that ends the process reports it killed', async () => {
  const proc = run();
  const tasks = table(137, proc);
  tasks.add('t1', proc.run);
  expect(await tasks.kill('t1')).toMatchObject({ state: 'killed', exitCode: 137 });
  // Killed once is killed: a second kill reports the same.
  expect(await tasks.kill('t1')).toMatchObject({ state: 'killed', exitCode: 137 });
});

test('a kill after the end was seen changes nothing', async () => {
  const proc = run();
  const tasks = table(137, proc);
  tasks.add('t1', proc.run);
  proc.end(3);
  await tasks.wait('t1');
  expect(await tasks.kill('t1')).toMatchObject({ state: 'exited', exitCode: 3 });
});

// A sandbox destroyed with commands running (chaos seed 8500: a new activation on the same host
// destroying a fenced one's container) kills them first, then ends each with its real end.
test('a destroy reports a command that exited on its own as exited, the others killed', async () => {
  const exitedOwn = run();
  const killed = run();
  const silent = run();
  const tasks = table(137, killed);
  tasks.add('own', exitedOwn.run);
  tasks.add('killed', killed.run);
  tasks.add('silent', silent.run);
  const ending = tasks.endAll(200);
  // The first exited 0 just before the kill, its end still on its way; the second dies of it;
  // the third shows no end in time.
  exitedOwn.end(0);
  killed.end(137);
  await ending;
  expect(tasks.status('own')).toMatchObject({ state: 'exited', exitCode: 0 });
  expect(tasks.status('killed')).toMatchObject({ state: 'killed', exitCode: 137 });
  expect(tasks.status('silent')).toMatchObject({ state: 'killed', exitCode: 137 });
  expect(tasks.anyRunning).toBe(false);
});

// Chaos `docker-restart` (seed 30000): a command killed with its container by a daemon restart
// was reported exited (-1) and failed its task; it is the node's fault, retried by the job.
test('a command whose sandbox went down under it ends failed, naming why', async () => {
  const proc = run();
  const judged: number[] = [];
  const tasks = table(137, proc, async (_taskId, exitCode) => {
    judged.push(exitCode);
    return {
      oomKilled: false,
      lost: 'its container stopped (code 137) while the Docker daemon was away',
    };
  });
  tasks.add('t1', proc.run);
  proc.end(-1);
  const status = await tasks.wait('t1');
  expect(judged).toEqual([-1]);
  expect(status).toMatchObject({
    state: 'failed',
    error:
      "the command's end was lost: its container stopped (code 137) while the Docker daemon was away",
  });
});

test('a command whose output stream was cut is killed, then ends failed', async () => {
  const proc = run();
  const kills: string[] = [];
  const tasks = new TaskTable('sbx-test', {
    killTree: async (_taskId, _run, why) => void kills.push(why),
    // The container survived: only the exec's stream went with the daemon.
    judgeEnd: async () => ({ oomKilled: false }),
  });
  tasks.add('t1', {
    ...proc.run,
    done: proc.run.done.then((e) => ({
      ...e,
      lost: 'its output stream was cut while the Docker daemon was away',
    })),
  });
  proc.end(-1);
  const status = await tasks.wait('t1');
  expect(kills).toEqual(['lost']);
  expect(status).toMatchObject({
    state: 'failed',
    error: "the command's end was lost: its output stream was cut while the Docker daemon was away",
  });
});

test('a command killed for memory stays exited, with oomKilled, and no error', async () => {
  const proc = run();
  const tasks = table(137, proc, async () => ({ oomKilled: true }));
  tasks.add('t1', proc.run);
  proc.end(137);
  const status = await tasks.wait('t1');
  expect(status).toMatchObject({ state: 'exited', exitCode: 137, oomKilled: true });
  expect(status.error).toBeUndefined();
});

test('an exit of 0 is not judged', async () => {
  const proc = run();
  const judgeEnd = jest.fn(async () => ({ oomKilled: false, lost: 'never asked' }));
  const tasks = table(137, proc, judgeEnd);
  tasks.add('t1', proc.run);
  proc.end(0);
  expect(await tasks.wait('t1')).toMatchObject({ state: 'exited', exitCode: 0 });
  expect(judgeEnd).not.toHaveBeenCalled();
});
