import {
  batchEvents,
  type JobEventRecord,
  JobEventRecordSchema,
  MAX_EVENT_MESSAGE_BYTES,
  MAX_EVENTS_PER_MESSAGE,
} from '@troupe/coordinator';

function ev(sequence: number, type: JobEventRecord['type'], message = '', jobId = 'j1') {
  return { sequence, jobId, type, timeUnixMs: 1, taskId: '', message };
}

function decoded(body: Uint8Array): unknown[] {
  const parsed = JSON.parse(Buffer.from(body).toString('utf8')) as unknown;
  return Array.isArray(parsed) ? parsed : [parsed];
}

describe('batchEvents', () => {
  it('stores consecutive task events in one message, each job-level event last in its own', () => {
    const events = [
      ev(1, 'JOB_QUEUED'),
      ev(2, 'JOB_STARTED'),
      ev(3, 'TASK_QUEUED'),
      ev(4, 'TASK_STARTED'),
      ev(5, 'JOB_CANCEL_REQUESTED'),
      ev(6, 'TASK_FINISHED'),
      ev(7, 'TASK_FINISHED'),
      ev(8, 'JOB_FINISHED'),
    ];
    const batches = batchEvents(events);
    expect(batches.map((b) => b.events.map((e) => e.sequence))).toEqual([
      [1],
      [2],
      [3, 4, 5],
      [6, 7, 8],
    ]);
    // The body is the events themselves: one object alone, an array for several.
    expect(JSON.parse(Buffer.from(batches[0]!.body).toString('utf8'))).toEqual(events[0]);
    expect(decoded(batches[2]!.body).map((e) => JobEventRecordSchema.parse(e))).toEqual(
      events.slice(2, 5),
    );
  });

  it('caps a message at MAX_EVENTS_PER_MESSAGE events and MAX_EVENT_MESSAGE_BYTES bytes', () => {
    const many = Array.from({ length: MAX_EVENTS_PER_MESSAGE * 2 + 1 }, (_, i) =>
      ev(i + 1, 'TASK_GRADED'),
    );
    expect(batchEvents(many).map((b) => b.events.length)).toEqual([
      MAX_EVENTS_PER_MESSAGE,
      MAX_EVENTS_PER_MESSAGE,
      1,
    ]);
    const big = Array.from({ length: 40 }, (_, i) => ev(i + 1, 'LOG', 'x'.repeat(10_000)));
    // LOG is job-level: one per message. Task events of the same size share messages.
    expect(batchEvents(big)).toHaveLength(40);
    const bigTasks = big.map((e) => ({ ...e, type: 'TASK_STARTED' as const }));
    const batches = batchEvents(bigTasks);
    expect(batches.length).toBeGreaterThan(1);
    for (const b of batches) expect(b.body.length).toBeLessThanOrEqual(MAX_EVENT_MESSAGE_BYTES);
    expect(batches.flatMap((b) => b.events.map((e) => e.sequence))).toEqual(
      bigTasks.map((e) => e.sequence),
    );
    // An event larger than the cap still goes, alone.
    const huge = [ev(1, 'TASK_STARTED'), ev(2, 'TASK_STARTED', 'y'.repeat(100_000))];
    expect(batchEvents(huge).map((b) => b.events.length)).toEqual([1, 1]);
  });

  it('never mixes two jobs in one message', () => {
    const batches = batchEvents([
      ev(1, 'TASK_QUEUED', '', 'a'),
      ev(1, 'TASK_QUEUED', '', 'b'),
      ev(2, 'TASK_QUEUED', '', 'b'),
    ]);
    expect(batches.map((b) => b.events.map((e) => `${e.jobId}:${e.sequence}`))).toEqual([
      ['a:1'],
      ['b:1', 'b:2'],
    ]);
  });
});
