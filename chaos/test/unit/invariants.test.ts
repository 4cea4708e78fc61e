import type { JobEvent__Output, JobResults__Output } from '@troupe/proto';
import type { ExecRecord } from '../../src/cluster-observer';
import {
  checkEventLog,
  checkExecutions,
  checkGradedOnce,
  checkSingleActivation,
  type ReceivedEvent,
} from '../../src/invariants';

const ev = (sequence: number, type: string, taskId = ''): ReceivedEvent => ({
  event: {
    sequence,
    type,
    taskId,
    jobId: 'j',
    payloadJson: '',
    message: '',
  } as unknown as JobEvent__Output,
  receivedAtMs: sequence,
});

const results = (statuses: Record<string, string>) =>
  ({
    jobId: 'j',
    state: 'SUCCEEDED',
    aggregate: null,
    tasks: Object.entries(statuses).map(([taskId, status]) => ({
      taskId,
      status,
      attempts: 2,
      error: '',
      detailsJson: status === 'TASK_FAILED' ? '{"exitCode":137}' : '',
    })),
  }) as unknown as JobResults__Output;

test('graded exactly once: a second grade, a missing one, or a failed result are violations', () => {
  const good = [ev(1, 'JOB_QUEUED'), ev(2, 'TASK_GRADED', 'a'), ev(3, 'TASK_GRADED', 'b')];
  expect(
    checkGradedOnce(['a', 'b'], { events: good }, results({ a: 'TASK_PASSED', b: 'TASK_PASSED' })),
  ).toEqual([]);
  const twice = [...good, ev(4, 'TASK_GRADED', 'a')];
  expect(
    checkGradedOnce(['a', 'b'], { events: twice }, results({ a: 'TASK_PASSED', b: 'TASK_PASSED' })),
  ).toEqual(['task a: 2 TASK_GRADED and 0 TASK_FINISHED events']);
  const errored = [ev(1, 'TASK_GRADED', 'a'), ev(2, 'TASK_FINISHED', 'b')];
  expect(
    checkGradedOnce(
      ['a', 'b'],
      { events: errored },
      results({ a: 'TASK_FAILED', b: 'TASK_ERRORED' }),
    ),
  ).toEqual([
    'task b: 0 TASK_GRADED and 1 TASK_FINISHED events',
    'task a: result TASK_FAILED after 2 attempts ({"exitCode":137})',
    'task b: result TASK_ERRORED after 2 attempts ()',
  ]);
});

test('event log: a gap, a repeat, a missing end or a watcher that never ended are violations', () => {
  const ok = [
    ev(1, 'JOB_QUEUED'),
    ev(2, 'JOB_STARTED'),
    ev(3, 'TASK_GRADED', 'a'),
    ev(4, 'JOB_FINISHED'),
  ];
  expect(checkEventLog({ events: ok, finishedAtMs: 4, endedAtMs: 5 }, 1_000)).toEqual([]);
  const gap = [ok[0]!, ok[1]!, ok[3]!];
  expect(checkEventLog({ events: gap, finishedAtMs: 4, endedAtMs: 5 }, 1_000)).toEqual([
    'event #3 has sequence 4 (lost or repeated)',
  ]);
  const dup = [...ok.slice(0, 3), ev(4, 'TASK_GRADED', 'a'), ev(5, 'JOB_FINISHED')];
  expect(checkEventLog({ events: dup, finishedAtMs: 5, endedAtMs: 6 }, 1_000)).toEqual([
    'TASK_GRADED a delivered 2 times',
  ]);
  expect(checkEventLog({ events: ok, finishedAtMs: 4 }, 1_000)).toEqual([
    'watcher did not end within 1000 ms of JOB_FINISHED',
  ]);
  expect(checkEventLog({ events: ok.slice(0, 3) }, 1_000)).toEqual([
    'last event TASK_GRADED, not JOB_FINISHED',
  ]);
});

test('executions: a finished command run again is a violation; a retry of an unfinished one is not', () => {
  const markers = new Map([
    ['t001', 'chaos-x-t001'],
    ['t002', 'chaos-x-t002'],
  ]);
  const start = (execId: string, marker: string): ExecRecord => ({
    action: 'exec_start',
    execId,
    command: `sh -c echo ${marker} && sleep 1`,
    atMs: 0,
  });
  const die = (execId: string, exitCode: number): ExecRecord => ({
    action: 'exec_die',
    execId,
    exitCode,
    atMs: 0,
  });
  // t001: killed (137) and retried; t002: finished, then started again.
  const execs = [
    start('1', 'chaos-x-t001'),
    die('1', 137),
    start('2', 'chaos-x-t001'),
    die('2', 0),
    start('3', 'chaos-x-t002'),
    die('3', 0),
    start('4', 'chaos-x-t002'),
  ];
  const { violations, executions } = checkExecutions(markers, execs);
  expect(violations).toEqual(['task t002: its command ran again after it finished']);
  expect(Object.fromEntries(executions)).toEqual({ t001: 2, t002: 2 });
  expect(checkExecutions(markers, execs.slice(0, 4)).violations).toEqual([
    'task t002: Docker reported no execution',
  ]);
});

test('single activation: one epoch live on two hosts, or an epoch going back, is a violation', () => {
  const at = (state: string, epoch: number, hostId?: string, incarnation?: string) => ({
    key: 'task.a',
    state,
    epoch,
    atMs: 0,
    ...(hostId ? { hostId } : {}),
    ...(incarnation ? { incarnation } : {}),
  });
  expect(
    checkSingleActivation([
      at('ACTIVATING', 1, 'h1'),
      at('IDLE', 1, 'h1', 'i1'),
      at('SLEEPING', 2),
      at('ACTIVATING', 3, 'h2'),
      at('RUNNING', 3, 'h2', 'i2'),
    ]),
  ).toEqual([]);
  expect(checkSingleActivation([at('IDLE', 1, 'h1', 'i1'), at('RUNNING', 1, 'h2', 'i2')])).toEqual([
    'task.a: epoch 1 live on h1/i1 and on h2/i2',
  ]);
  expect(checkSingleActivation([at('IDLE', 1, 'h1', 'i1'), at('RUNNING', 1, 'h1', 'i9')])).toEqual([
    'task.a: epoch 1 live on h1/i1 and on h1/i9',
  ]);
  expect(checkSingleActivation([at('IDLE', 3, 'h1'), at('IDLE', 2, 'h1')])).toEqual([
    'task.a: epoch went back from 3 to 2',
  ]);
});
