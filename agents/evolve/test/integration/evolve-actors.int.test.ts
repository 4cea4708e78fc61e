import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  waitForEvent,
  type NatsServerHandle,
} from '@troupe/testkit';
import { type Evaluate } from '../../src/evaluation-request';
import { createEvolveActors } from './evolve-search-actors';
import { type EvolveOptions } from '../../src/evolve-config';
import { evolveSubject } from '../../src/evolve-names';
import { JetStreamJournalStore } from '../../src/jet-stream-journal-store';
import { type FinalRecord, type JournalRecord } from '../../src/journal-record';
import { createProcessEvaluate } from './process-evaluate';
import { replayJournal } from '../../src/replay-journal';
import {
  type LoadedSearchTask,
  evolveOptionsFromSpec,
  loadSearchTask,
  renderEvaluatorCommand,
} from '../../src/search-task-spec';

// The evolve actors on a real nats-server, with the toy suite's evaluator run by host python3
// (test-only process evaluator). The crash test runs the search in a child process built from
// dist/ (run `npm run build` first) and kills it with SIGKILL in the middle of a generation.

const FIXTURES = path.join(__dirname, 'evolve-fixtures');
let server: NatsServerHandle;
let toy: LoadedSearchTask;

beforeAll(async () => {
  server = await startNatsServer();
  toy = await loadSearchTask(path.join(FIXTURES, 'toy-suite'));
});
afterAll(async () => {
  await server.stop();
});

function toyEvaluate(onCall?: (attemptId: string, infraRetry: number) => void): Evaluate {
  const inner = createProcessEvaluate({
    concurrency: 2,
    command: (req, program) =>
      renderEvaluatorCommand(toy.spec, {
        suite: toy.suiteDir,
        program,
        phase: req.phase,
        timeoutMs: req.timeoutMs,
      }),
  });
  return (req, options) => {
    onCall?.(req.attemptId, req.infraRetry);
    return inner(req, options);
  };
}

/** Journal records of a task as they are published (core subscription on the subject). */
function watchJournal(nc: NatsConnection, cluster: string, taskId: string) {
  const events = new EventEmitter();
  const seen: JournalRecord[] = [];
  const sub = nc.subscribe(evolveSubject(cluster, taskId));
  void (async () => {
    for await (const m of sub) {
      const record = m.json<JournalRecord>();
      seen.push(record);
      events.emit('record', record);
    }
  })();
  const final = waitForEvent<[JournalRecord]>(events, 'record', {
    timeoutMs: 90_000,
    filter: (r) => r.type === 'final',
    message: `final record of ${taskId}`,
  }).then(([r]) => r as FinalRecord);
  return { events, seen, final, stop: () => sub.unsubscribe() };
}

function options(extra: Partial<EvolveOptions> = {}): EvolveOptions {
  return { ...evolveOptionsFromSpec(toy.spec, { seed: 5 }), ...extra };
}

function checkJournal(records: JournalRecord[]) {
  const nodes = records.filter((r) => r.type === 'node');
  const ids = nodes.map((n) => n.attemptId);
  expect(new Set(ids).size).toBe(ids.length);
  const starts = new Set(records.filter((r) => r.type === 'attempt').map((r) => r.attemptId));
  for (const id of ids) expect(starts.has(id)).toBe(true);
  const generations = records.filter((r) => r.type === 'generation').map((r) => r.generation);
  expect(generations).toEqual(generations.map((_, i) => i));
  for (const type of ['task', 'stop', 'final'] as const) {
    expect(records.filter((r) => r.type === type)).toHaveLength(1);
  }
  return { nodes, generations };
}

test('a small search on a toy suite runs to completion through the actors, and a budget stop goes to final selection', async () => {
  const cluster = randomClusterName();
  const nc = await connect({ servers: server.url });
  const journal = new JetStreamJournalStore({ connection: nc, cluster });
  const { search, island } = createEvolveActors({ journal, evaluate: toyEvaluate() });
  const system = await ActorSystem.start({ cluster, connection: nc, hosting: [search, island] });
  const full = watchJournal(nc, cluster, 'toy-full');
  const capped = watchJournal(nc, cluster, 'toy-capped');
  try {
    const seeds = toy.seeds;
    await system
      .ref(search, 'toy-full')
      .post('run', { taskId: 'toy-full', options: options(), seeds }, { dedupeId: 'run:toy-full' });
    await system
      .ref(search, 'toy-capped')
      .post(
        'run',
        { taskId: 'toy-capped', options: options({ limits: { maxEvaluations: 3 } }), seeds },
        { dedupeId: 'run:toy-capped' },
      );
    const final = await full.final;
    expect(final).toMatchObject({
      status: 'succeeded',
      stopReason: 'generations',
      selection: { source: 'best_validation' },
    });
    expect(final.selection.score!).toBeGreaterThan(-5); // the seed's score
    expect(final.test?.result?.status).toBe('ok');
    const { records } = await journal.read('toy-full');
    const { generations } = checkJournal(records);
    expect(generations).toHaveLength(4);
    const state = replayJournal(records);
    expect(state.final).toEqual(final);
    expect(state.islands.flat().length).toBeGreaterThan(0);
    expect(await system.ref(search, 'toy-full').ask('status', {})).toEqual({
      status: 'done',
      final,
    });

    const stopped = await capped.final;
    expect(stopped).toMatchObject({ stopReason: 'evaluations', status: 'succeeded' });
    expect(stopped.usage.evaluations).toBe(3);
    expect(stopped.selection.source).toBe('best_validation');
  } finally {
    full.stop();
    capped.stop();
    await system.shutdown({ graceMs: 1_000 });
    await nc.close();
  }
});

test('kill -9 of the process hosting a search, then a restart: the search finishes and no attempt is journaled twice', async () => {
  const cluster = randomClusterName();
  const taskId = 'toy-crash';
  const nc = await connect({ servers: server.url });
  const watch = watchJournal(nc, cluster, taskId);
  const child = spawn(
    process.execPath,
    [path.join(FIXTURES, 'evolve-host.js'), server.url, cluster, 'doomed', '0.4'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output: string[] = [];
  child.stdout.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr.on('data', (d: Buffer) => output.push(d.toString()));
  let survivor: ActorSystem | undefined;
  try {
    await waitFor(() => output.join('').includes('READY'), {
      timeoutMs: 20_000,
      message: `evolve host did not start: ${output.join('')}`,
    });
    const journal = new JetStreamJournalStore({ connection: nc, cluster });
    const client = await ActorSystem.start({ cluster, connection: nc });
    const { search } = createEvolveActors({ journal, evaluate: toyEvaluate() });
    await client.ref(search, taskId).post(
      'run',
      {
        taskId,
        options: options({ limits: { maxGenerations: 8 }, islandConcurrency: 2 }),
        seeds: toy.seeds,
      },
      { dedupeId: `run:${taskId}` },
    );
    // Kill while a generation is in flight: some attempts started, not all results in.
    await waitFor(
      () => {
        const nodes = watch.seen.filter((r) => r.type === 'node').length;
        const starts = watch.seen.filter((r) => r.type === 'attempt').length;
        return nodes >= 5 && starts > nodes;
      },
      { timeoutMs: 60_000, message: 'search progress before the kill' },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const beforeKill = new Set(
      (await journal.read(taskId)).records.flatMap((r) => (r.type === 'node' ? [r.attemptId] : [])),
    );

    // A new host: its placer finds the dead host's search actor with the pending `run` post and
    // activates it here; the run resumes from the journal.
    const evaluatedAfter: string[] = [];
    const resumed = createEvolveActors({
      journal,
      evaluate: toyEvaluate((id, retry) => evaluatedAfter.push(`${id}#${retry}`)),
    });
    survivor = await ActorSystem.start({
      cluster,
      connection: nc,
      hostId: 'survivor',
      hosting: [resumed.search, resumed.island],
      sweepIntervalMs: 500,
    });
    const final = await watch.final;
    expect(final.status).toBe('succeeded');
    expect(final.stopReason).toBe('generations');
    const { records } = await journal.read(taskId);
    const { nodes, generations } = checkJournal(records);
    expect(generations).toHaveLength(8);
    // Nothing journaled before the kill was evaluated again, and nothing twice after it.
    for (const id of evaluatedAfter) expect(beforeKill.has(id.split('#')[0]!)).toBe(false);
    expect(new Set(evaluatedAfter).size).toBe(evaluatedAfter.length);
    const state = replayJournal(records);
    expect(state.generation).toBe(8);
    expect(final.usage.evaluations).toBe(nodes.length + final.usage.lostAttempts);
    await client.shutdown({ graceMs: 500 });
  } finally {
    watch.stop();
    if (child.exitCode === null) child.kill('SIGKILL');
    await survivor?.shutdown({ graceMs: 1_000 });
    await nc.close();
  }
});
