import { JobEventLog, type JobEventRecord, MAX_EVENTS_PER_MESSAGE } from '@troupe/coordinator';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { eventsStreamName, eventsSubject, Header } from '@troupe/proto';
import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';

// The event log stores several events per stream message (one publish, one acknowledgement and
// one delivery per watcher for a batch of a busy job's events): readers still see every event
// once, in order, from any sequence, and the cancellation watch still sees JOB_CANCEL_REQUESTED
// from a message's header alone.

let server: NatsServerHandle;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const JOB = 'j-batched';

function ev(sequence: number, type: JobEventRecord['type']): JobEventRecord {
  return {
    sequence,
    jobId: JOB,
    type,
    timeUnixMs: 1_000 + sequence,
    taskId: `t${sequence}`,
    message: `e${sequence}`,
  };
}

async function readAll(log: JobEventLog, fromSequence = 1, follow = true): Promise<number[]> {
  const out: number[] = [];
  const signal = AbortSignal.timeout(20_000);
  for await (const e of log.read(JOB, { fromSequence, follow, signal })) out.push(e.sequence);
  return out;
}

async function storedMessages(cluster: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(eventsStreamName(cluster));
  return info.state.messages;
}

test('a busy job’s events share messages; readers get each once, in order, from any sequence', async () => {
  const cluster = randomClusterName();
  const log = await JobEventLog.open(nc, cluster);
  // What the cancellation watch sees: a core subscription reading only the type header.
  const types: string[] = [];
  const sub = nc.subscribe(eventsSubject(cluster, JOB), {
    callback: (_err, m) => void types.push(m.headers?.get(Header.EVENT_TYPE) ?? '?'),
  });
  await nc.flush();
  const n = 2 * MAX_EVENTS_PER_MESSAGE + 100;
  const events: JobEventRecord[] = [ev(1, 'JOB_QUEUED'), ev(2, 'JOB_STARTED')];
  for (let s = 3; s <= n; s++)
    events.push(ev(s, s === 300 ? 'JOB_CANCEL_REQUESTED' : 'TASK_GRADED'));
  // Appended as a job actor's turns do: a few flushes of many events each.
  await log.append(events.slice(0, 150));
  await log.append(events.slice(150, 400));
  await log.append(events.slice(400));
  // Six messages for 612 events: JOB_QUEUED and JOB_STARTED alone, 3..150, 151..300 (ending at
  // the cancellation), 301..400, and 401..612 (under MAX_EVENTS_PER_MESSAGE).
  expect(await storedMessages(cluster)).toBe(6);
  expect(await log.lastSequence(JOB)).toBe(n);
  expect(await readAll(log, 1, false)).toEqual(events.map((e) => e.sequence));
  // From the middle of a message: the events before the sequence asked for are not given.
  expect(await readAll(log, 290, false)).toEqual(events.slice(289).map((e) => e.sequence));
  await nc.flush();
  sub.unsubscribe();
  expect(types.filter((t) => t === 'JOB_CANCEL_REQUESTED')).toHaveLength(1);
  expect(types).toHaveLength(6);

  // A follower gets what is appended later, and ends at JOB_FINISHED.
  const following = readAll(log, n - 1);
  await log.append([ev(n + 1, 'TASK_GRADED'), ev(n + 2, 'JOB_FINISHED')]);
  expect(await following).toEqual([n - 1, n, n + 1, n + 2]);
});

test('a re-sent append grouped differently adds no event twice; older one-event messages read', async () => {
  const cluster = randomClusterName();
  const log = await JobEventLog.open(nc, cluster);
  // A message as earlier versions stored every event: one JSON object, its own id.
  const h = headers();
  h.set(Header.EVENT_SEQ, '1');
  h.set(Header.EVENT_TYPE, 'JOB_QUEUED');
  h.set(Header.MSG_ID, `${JOB}:1`);
  const js = (await import('@nats-io/jetstream')).jetstream(nc);
  await js.publish(eventsSubject(cluster, JOB), JSON.stringify(ev(1, 'JOB_QUEUED')), {
    headers: h,
  });
  // The same first event again (the stream drops it by its id), then 2..6.
  await log.append([ev(1, 'JOB_QUEUED'), ev(2, 'TASK_QUEUED'), ev(3, 'TASK_QUEUED')]);
  await log.append([ev(4, 'TASK_STARTED'), ev(5, 'TASK_STARTED')]);
  // A job actor that crashed before committing its turn appends 2..6 again in one message.
  const again = [2, 3, 4, 5].map((s) => ev(s, s < 4 ? 'TASK_QUEUED' : 'TASK_STARTED'));
  await log.append([...again, ev(6, 'TASK_GRADED')]);
  await log.append([ev(7, 'JOB_FINISHED')]);
  expect(await readAll(log)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  expect(await log.lastSequence(JOB)).toBe(7);
});
