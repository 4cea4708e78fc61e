import { noopLogger, type RefFactory, type UntypedActorRef } from '@troupe/actors';
import {
  createShellTasksDriver,
  shellSandboxId,
  type ShellTaskInput,
  ShellTaskInputSchema,
} from '@troupe/benchmarks';
import { parseJobSpec, type TaskArtifacts, type TaskContext } from '@troupe/coordinator';
import { ErrorCode, errorCode, ErrorReason, TroupeError } from '@troupe/proto';

// The race of chaos seed 4021's t005, which real sandboxes hit only by chance: a replay finds
// the command still running in the interrupted execution's sandbox and waits for it there; the
// sandbox's next activation reads the command's end from its container, records it and removes
// the container, which fails the wait with `sandbox … was destroyed`. The sandboxes here are
// scripted replies to the driver's asks, in the shapes the node agent's sandbox actor gives
// (shell-tasks-recovery.int.test.ts covers the same driver against real ones).

const driver = createShellTasksDriver({ imageRecipes: undefined });
const spec = parseJobSpec({
  kind: 'shell-tasks',
  config: { saveOutput: false },
  tasks: [{ id: 't0', command: 'sleep 1; echo done' }],
});

/** An ask a scripted sandbox received. */
interface Ask {
  sandboxId: string;
  type: string;
}

/** Replies of scripted sandboxes, by sandbox id: each ask takes the next reply of its type. */
type Script = Record<string, Record<string, (() => unknown)[]>>;

/** Refs to sandboxes that answer from `script` and record every ask in `asks`. */
function scriptedRefs(script: Script, asks: Ask[]): RefFactory {
  const refOf = (sandboxId: string): UntypedActorRef => {
    const ref = {
      withHints: () => ref,
      ask: async (type: string): Promise<unknown> => {
        asks.push({ sandboxId, type });
        const next = script[sandboxId]?.[type]?.shift();
        if (!next) throw new Error(`no scripted reply to ${type} at ${sandboxId}`);
        return next();
      },
    };
    // The driver sends only `withHints` and `ask`: the rest of a ref is never reached.
    return ref as unknown as UntypedActorRef;
  };
  return {
    ref: () => {
      throw new Error('the shell-tasks driver uses untyped refs');
    },
    refOf: (addr) => refOf(addr.id),
  };
}

const noArtifacts: TaskArtifacts = {
  pathOf: (name) => `tasks/t0/${name}`,
  adopt: (name) => `tasks/t0/${name}`,
  put: () => Promise.reject(new Error('no artifacts in this test')),
};

/** The context of the replay of an attempt interrupted in execution `e1`. */
function replayContext(refs: RefFactory, said: string[]): TaskContext {
  const log = {
    ...noopLogger,
    info: (_obj: object, msg?: string) => void said.push(msg ?? ''),
    warn: (_obj: object, msg?: string) => void said.push(msg ?? ''),
    child: () => log,
  };
  return {
    jobId: 'j-rewait',
    taskId: 't0',
    index: 0,
    attempt: 1,
    spec,
    signal: AbortSignal.timeout(30_000),
    deadlineUnixMs: Date.now() + 30_000,
    refs,
    log,
    hostId: 'test',
    execution: 2,
    resourceId: 'e2',
    staleResourceIds: ['e1'],
    earlierResourceIds: ['e1'],
    interrupted: () => false,
    artifacts: noArtifacts,
    progress: () => undefined,
  };
}

async function input(): Promise<ShellTaskInput> {
  const plan = await driver.plan(spec, {
    jobId: 'j-rewait',
    signal: AbortSignal.timeout(10_000),
    log: noopLogger,
    payloadPrefix: 'jobs/j-rewait/payload/',
  });
  return ShellTaskInputSchema.parse(plan[0]!.input);
}

const earlierId = shellSandboxId('e1');
const ownId = shellSandboxId('e2');
const destroyed = () => {
  throw new TroupeError(ErrorCode.NOT_FOUND, `sandbox ${earlierId} was destroyed`, {
    details: { sandboxId: earlierId },
  });
};
const stillRunning = () => ({ status: 'ready', commands: [{ taskId: 'c1' }] });
/** A sandbox in `status` that recorded command c1's exit 0 with `stdout`. */
const recorded = (status: string, stdout: string, durationMs: number) => () => ({
  status,
  commands: [{ taskId: 'c1', ended: { state: 'exited', exitCode: 0, stdout, durationMs } }],
});
/** What an ask reports when the sandbox's node agent died with it (AskOptions.livenessMs). */
const silent = () => {
  throw new TroupeError(ErrorCode.UNAVAILABLE, 'its host showed no sign of life for 4000 ms', {
    retryable: true,
    details: { hostSilent: true },
  });
};
// A second run, should the driver start one: its output tells it from the first.
const ownSandbox = () => ({
  create: [() => ({ sandboxId: ownId })],
  startBackground: [() => ({ taskId: 'c2' })],
  wait: [() => ({ state: 'exited', exitCode: 0, stdout: 'again\n', durationMs: 1_000 })],
});

describe('shell-tasks driver, a failed wait on an earlier execution’s command', () => {
  it('reads the earlier sandbox again and finishes with the end it recorded, not running the command again', async () => {
    const asks: Ask[] = [];
    const said: string[] = [];
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: [stillRunning, recorded('destroyed', 'done\n', 1_012)],
          wait: [destroyed],
          destroy: [() => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );

    const run = await driver.runTask(replayContext(refs, said), await input());

    expect(run).toMatchObject({
      exitCode: 0,
      stdout: 'done\n',
      timedOut: false,
      durationMs: 1_012,
      recoveredFrom: 'e1',
    });
    // The command ran once, in the earlier sandbox: nothing was asked of a sandbox of this
    // execution, and the earlier one was removed.
    expect(asks).toEqual([
      { sandboxId: earlierId, type: 'status' },
      { sandboxId: earlierId, type: 'wait' },
      { sandboxId: earlierId, type: 'status' },
      { sandboxId: earlierId, type: 'destroy' },
    ]);
    expect(said).toContain(
      'the earlier execution’s sandbox recorded the command’s end: not running it again',
    );
  });

  it('runs the command again when the earlier sandbox recorded no end of it', async () => {
    const asks: Ask[] = [];
    const said: string[] = [];
    const lost = () => ({ status: 'lost', commands: [{ taskId: 'c1' }] });
    const refs = scriptedRefs(
      {
        [earlierId]: {
          // The container was lost with the command in it, and no end is reported in the wait
          // for one (`lostEndWaitMs`): its end is unknown.
          status: [stillRunning, ...Array.from({ length: 50 }, () => lost)],
          wait: [destroyed],
          destroy: [() => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );
    const driver = createShellTasksDriver({ imageRecipes: undefined, lostEndWaitMs: 700 });

    const run = await driver.runTask(replayContext(refs, said), await input());

    expect(run).toMatchObject({ exitCode: 0, stdout: 'again\n' });
    expect(run.recoveredFrom).toBeUndefined();
    const seen = asks.map((a) => `${a.type} ${a.sandboxId}`);
    expect(seen.slice(0, 3)).toEqual([
      `status ${earlierId}`,
      `wait ${earlierId}`,
      `status ${earlierId}`,
    ]);
    // Read again every 500 ms within the 700 ms wait for a reported end, then run again.
    const reads = seen.filter((a) => a === `status ${earlierId}`).length;
    expect(reads).toBeGreaterThanOrEqual(2);
    expect(reads).toBeLessThanOrEqual(4);
    expect(seen.slice(-4)).toEqual([
      `destroy ${earlierId}`,
      `create ${ownId}`,
      `startBackground ${ownId}`,
      `wait ${ownId}`,
    ]);
    expect(said).toContain(
      'the earlier execution’s sandbox recorded no end of the command: running it again',
    );
  });
});

describe('shell-tasks driver, an earlier sandbox whose host falls silent', () => {
  it('asks its status again, and finds the end its next activation read', async () => {
    const asks: Ask[] = [];
    const said: string[] = [];
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: [silent, recorded('ready', 'done\n', 1_003)],
          destroy: [() => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );

    const run = await driver.runTask(replayContext(refs, said), await input());

    // Taking the silence for "cannot be read" would have run the finished command again.
    expect(run).toMatchObject({ exitCode: 0, stdout: 'done\n', recoveredFrom: 'e1' });
    expect(asks.map((a) => `${a.type} ${a.sandboxId}`)).toEqual([
      `status ${earlierId}`,
      `status ${earlierId}`,
      `destroy ${earlierId}`,
    ]);
  });
});

describe('shell-tasks driver, an earlier sandbox whose activation is on its way out', () => {
  it('asks its status again once the passivation is over, not running the command again', async () => {
    const asks: Ask[] = [];
    const said: string[] = [];
    // What an ask reports after its activation rounds all reached a passivating activation.
    const passivating = () => {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `sandbox/${earlierId} is passivating`, {
        details: { moved: true },
      });
    };
    // What an ask reports when every activation round found the actor gone again.
    const inactive = () => {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `sandbox/${earlierId} does not stay active`, {
        details: { inactive: true },
      });
    };
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: [passivating, inactive, recorded('lost', 'done\n', 1_002)],
          destroy: [() => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );

    const run = await driver.runTask(replayContext(refs, said), await input());

    expect(run).toMatchObject({ exitCode: 0, stdout: 'done\n', recoveredFrom: 'e1' });
    expect(asks.map((a) => `${a.type} ${a.sandboxId}`)).toEqual([
      `status ${earlierId}`,
      `status ${earlierId}`,
      `status ${earlierId}`,
      `destroy ${earlierId}`,
    ]);
    expect(said).not.toContain('could not read an earlier execution’s sandbox');
  });
});

describe('shell-tasks driver, an earlier sandbox that cannot be activated', () => {
  // Chaos seed 8020: waited for up to the status ask's deadline, such a sandbox held its task for
  // 75 s. Chaos seed 8328: skipped after the wait, its finished command ran again. The read now
  // gives up after `movedWaitMs` and fails the attempt, retryable, running nothing.
  it('gives up its read after a while and fails the attempt, retryable, without running', async () => {
    const asks: Ask[] = [];
    const said: string[] = [];
    const inactive = () => {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `sandbox/${earlierId} does not stay active`, {
        details: { inactive: true },
      });
    };
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: Array.from({ length: 20 }, () => inactive),
          destroy: [inactive],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );
    const driver = createShellTasksDriver({ imageRecipes: undefined, movedWaitMs: 600 });
    const started = Date.now();

    const err = await driver
      .runTask(replayContext(refs, said), await input())
      .catch((e: unknown) => e);

    // Not held for the status ask's 15 s.
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(errorCode(err)).toBe(ErrorCode.UNAVAILABLE);
    expect((err as TroupeError).retryable).toBe(true);
    expect((err as Error).message).toContain(`could not read the sandbox of an earlier execution`);
    const statusAsks = asks.filter((a) => a.type === 'status').length;
    expect(statusAsks).toBeGreaterThanOrEqual(2);
    expect(statusAsks).toBeLessThanOrEqual(5);
    // Nothing ran, and nothing of its own was made.
    expect(asks.filter((a) => a.sandboxId === ownId)).toEqual([]);
    expect(said).toContain('could not read an earlier execution’s sandbox');
  });
});

describe('shell-tasks driver, a stale sandbox whose destroy is not done', () => {
  // Chaos seeds 8432, 8442: the destroy met a NATS server's restart; the reply said the turn was
  // rolled back, and the destroy was given up with the container in place.
  const commitFailed = () => {
    throw new TroupeError(ErrorCode.UNAVAILABLE, `sandbox/${earlierId}: state commit failed`, {
      retryable: true,
      details: { commitFailed: true },
    });
  };
  const checkpointFailed = () => {
    throw new TroupeError(ErrorCode.UNAVAILABLE, 'actor state store unavailable', {
      reason: ErrorReason.STORE_UNAVAILABLE,
    });
  };
  // A node agent cut off for a few seconds, and not declared dead, keeps the sandbox live with
  // its container: a destroy given up at the first silence left it for its idle timeout.
  it.each([
    ['its host fell silent', silent],
    ['its turn’s commit failed', commitFailed],
    ['its handler met a store outage', checkpointFailed],
  ])('asks its destroy again when %s, not leaving its container behind', async (_, outage) => {
    const asks: Ask[] = [];
    const said: string[] = [];
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: [() => ({ status: 'ready', commands: [] })],
          destroy: [outage, () => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );

    const run = await driver.runTask(replayContext(refs, said), await input());

    expect(run).toMatchObject({ exitCode: 0, stdout: 'again\n' });
    expect(asks.map((a) => `${a.type} ${a.sandboxId}`)).toEqual([
      `status ${earlierId}`,
      `destroy ${earlierId}`,
      `destroy ${earlierId}`,
      `create ${ownId}`,
      `startBackground ${ownId}`,
      `wait ${ownId}`,
    ]);
    expect(said).not.toContain('could not destroy a stale sandbox');
  });
});

describe('shell-tasks driver, an earlier attempt whose command still runs', () => {
  it('waits for it there and does not run it again', async () => {
    // Chaos seed 7001: the attempt failed when its node agent, cut off for 2 s, was declared
    // dead; the agent was back, its command still running, when the next attempt looked. The
    // retry used to destroy that sandbox and run the command again, while the first run finished.
    const asks: Ask[] = [];
    const said: string[] = [];
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: [stillRunning],
          wait: [() => ({ state: 'exited', exitCode: 0, stdout: 'done\n', durationMs: 1_500 })],
          destroy: [() => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );
    const retry: TaskContext = {
      ...replayContext(refs, said),
      attempt: 2,
      execution: 1,
      staleResourceIds: [],
    };

    const run = await driver.runTask(retry, await input());

    expect(run).toMatchObject({ exitCode: 0, stdout: 'done\n', recoveredFrom: 'e1' });
    expect(asks.map((a) => `${a.type} ${a.sandboxId}`)).toEqual([
      `status ${earlierId}`,
      `wait ${earlierId}`,
      `destroy ${earlierId}`,
    ]);
  });
});

describe('shell-tasks driver, an adopted command whose sandbox is lost while waited for', () => {
  it('waits for the end its node agent reports, not running the command again', async () => {
    // The adopted command's node agent learns it was declared dead and fences the sandbox: the
    // wait fails, the next activation finds the sandbox lost with the command running, and the
    // fenced agent reports the command's end a moment later.
    const asks: Ask[] = [];
    const said: string[] = [];
    const lostRunning = () => ({ status: 'lost', commands: [{ taskId: 'c1' }] });
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: [stillRunning, lostRunning, recorded('lost', 'done\n', 900)],
          wait: [destroyed],
          destroy: [() => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );

    const run = await driver.runTask(replayContext(refs, said), await input());

    expect(run).toMatchObject({ exitCode: 0, stdout: 'done\n', recoveredFrom: 'e1' });
    expect(asks.map((a) => `${a.type} ${a.sandboxId}`)).toEqual([
      `status ${earlierId}`,
      `wait ${earlierId}`,
      `status ${earlierId}`,
      `status ${earlierId}`,
      `destroy ${earlierId}`,
    ]);
  });
});

describe('shell-tasks driver, an earlier sandbox lost with its command running', () => {
  // Its container was on a node agent cut off (or killed) mid-command: the agent reports the
  // command's end when it is back (fenced) or restarted, which may be after the retry looked.
  const lostRunning = () => ({ status: 'lost', commands: [{ taskId: 'c1' }] });
  const lostEnded = () => ({
    status: 'lost',
    commands: [
      { taskId: 'c1', ended: { state: 'exited', exitCode: 0, stdout: '', durationMs: 1_000 } },
    ],
  });
  /** A retry of the next attempt: the lost sandbox is an earlier attempt's, not adopted. */
  const retryContext = (refs: RefFactory, said: string[]): TaskContext => ({
    ...replayContext(refs, said),
    attempt: 2,
    execution: 1,
    staleResourceIds: [],
  });

  it('waits for the end its node agent reports, and does not run the command again', async () => {
    const asks: Ask[] = [];
    const said: string[] = [];
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: [lostRunning, lostRunning, lostEnded],
          destroy: [() => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );
    const driver = createShellTasksDriver({ imageRecipes: undefined, lostEndWaitMs: 20_000 });

    const run = await driver.runTask(retryContext(refs, said), await input());

    expect(run).toMatchObject({ exitCode: 0, recoveredFrom: 'e1' });
    expect(asks.map((a) => `${a.type} ${a.sandboxId}`)).toEqual([
      `status ${earlierId}`,
      `status ${earlierId}`,
      `status ${earlierId}`,
      `destroy ${earlierId}`,
    ]);
    expect(said).toContain(
      'an earlier execution’s sandbox went with its command running: waiting for its end',
    );
  });

  it('waits for it also when the lost sandbox was destroyed since (the failed attempt’s cleanup)', async () => {
    const asks: Ask[] = [];
    const said: string[] = [];
    const destroyedRunning = () => ({ status: 'destroyed', commands: [{ taskId: 'c1' }] });
    const destroyedEnded = () => ({ ...lostEnded(), status: 'destroyed' });
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: [destroyedRunning, destroyedEnded],
          destroy: [() => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );
    const driver = createShellTasksDriver({ imageRecipes: undefined, lostEndWaitMs: 20_000 });

    const run = await driver.runTask(retryContext(refs, said), await input());

    expect(run).toMatchObject({ exitCode: 0, recoveredFrom: 'e1' });
    expect(asks.filter((a) => a.sandboxId === ownId)).toEqual([]);
  });

  it('runs the command again when no end is reported in time', async () => {
    const asks: Ask[] = [];
    const said: string[] = [];
    const refs = scriptedRefs(
      {
        [earlierId]: {
          status: Array.from({ length: 50 }, () => lostRunning),
          destroy: [() => ({})],
        },
        [ownId]: ownSandbox(),
      },
      asks,
    );
    const driver = createShellTasksDriver({ imageRecipes: undefined, lostEndWaitMs: 1_200 });

    const run = await driver.runTask(retryContext(refs, said), await input());

    expect(run).toMatchObject({ exitCode: 0, stdout: 'again\n' });
    expect(run.recoveredFrom).toBeUndefined();
    const reads = asks.filter((a) => a.type === 'status').length;
    // The first read, then one every 500 ms within the 1.2 s.
    expect(reads).toBeGreaterThanOrEqual(2);
    expect(reads).toBeLessThanOrEqual(5);
    expect(asks.slice(-3).map((a) => `${a.type} ${a.sandboxId}`)).toEqual([
      `create ${ownId}`,
      `startBackground ${ownId}`,
      `wait ${ownId}`,
    ]);
  });
});
