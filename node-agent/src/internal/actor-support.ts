import {
  type ActorAddress,
  ErrorCode,
  formatAddress,
  isTroupeError,
  type Logger,
  retryWithBackoff,
  toTroupeError,
  TroupeError,
} from '@troupe/proto';

/** Passivates one activation of `addr` if it still runs at `epoch`. */
export type PassivateFn = (addr: ActorAddress, epoch: number) => Promise<void>;

/** How long a passivation that fails (its directory read in a NATS outage) is tried again. */
export const PASSIVATE_RETRY_MS = 30_000;

/**
 * Passivates the activation once the current turn is over: the reply is sent and the state
 * committed before it stops (calling it inside the turn and awaiting it would deadlock). A
 * failure is tried again, pausing 250 ms doubling to 2 s, for {@link PASSIVATE_RETRY_MS}: given up
 * at once (a directory read timing out while a NATS server restarted), the activation kept its
 * slot until its idle timeout, and five such in one job left no slot to read a sandbox in (chaos
 * seed 8636). Passivating is idempotent: only the activation of `epoch` is stopped.
 */
export function passivateAfterTurn(
  passivate: PassivateFn | undefined,
  turn: { self: ActorAddress; epoch: number },
  log: Logger,
): void {
  if (!passivate) return;
  const { self, epoch } = turn;
  setImmediate(() => {
    retryWithBackoff(() => passivate(self, epoch), {
      isRetryable: () => true,
      untilMs: Date.now() + PASSIVATE_RETRY_MS,
      unref: true,
    }).catch((err: unknown) =>
      log.warn({ err, actor: formatAddress(self) }, 'could not passivate'),
    );
  });
}

/**
 * How long an activation that holds no resource stays after its last turn before it passivates.
 * Passivated after every turn, a lost or destroyed sandbox asked by two callers at once (a task's
 * cleanup and its retry's read) answered one of them "is passivating" at each turn; each asked
 * again, woke a new activation, and passivated it for the other: neither was answered for tens of
 * seconds (chaos seeds 8328, 8500, 8508).
 */
export const PASSIVATE_QUIET_MS = 500;

/**
 * Wraps an actor's handlers so that an activation that holds no resource (its id is not in
 * `live`: never created, or destroyed) passivates and gives its slot back once no turn has run
 * for {@link PASSIVATE_QUIET_MS}.
 *
 * `promptly(turn)`, called within a turn, skips the quiet period for that turn: the activation
 * passivates as soon as the turn is over. For a turn that let go of the resource it held (a
 * `destroy` of its own container): that slot was kept half a second for nothing after every
 * task — with 4 slots and tasks of ~80 ms, a node agent ran 6 tasks a second instead of
 * dozens. The quiet period stays for activations that never held a resource (woken to answer
 * about a lost or destroyed one), where callers taking turns kept each other waiting.
 */
export function passivateWhenIdle(
  live: { has(id: string): boolean },
  passivate: PassivateFn | undefined,
  log: Logger,
) {
  const quiet = new Map<string, NodeJS.Timeout>();
  /** Keys of turns under way that asked to passivate as soon as they are over. */
  const prompt = new Set<string>();
  const keyOf = (self: ActorAddress, epoch: number) => `${formatAddress(self)}@${epoch}`;
  /** Stops the activation's quiet period, if one runs; returns its key. */
  const cancel = (self: ActorAddress, epoch: number): string => {
    const key = keyOf(self, epoch);
    clearTimeout(quiet.get(key));
    quiet.delete(key);
    return key;
  };
  const settle = (self: ActorAddress, epoch: number): void => {
    const key = cancel(self, epoch);
    const now = prompt.delete(key);
    if (live.has(self.id) || !passivate) return;
    if (now) {
      passivateAfterTurn(passivate, { self, epoch }, log);
      return;
    }
    const timer = setTimeout(() => {
      quiet.delete(key);
      if (!live.has(self.id)) passivateAfterTurn(passivate, { self, epoch }, log);
    }, PASSIVATE_QUIET_MS);
    timer.unref();
    quiet.set(key, timer);
  };
  const guard =
    <Ctx extends { self: ActorAddress; epoch: number }, M, S, R>(
      fn: (ctx: Ctx, msg: M, state: S) => Promise<R>,
    ) =>
    async (ctx: Ctx, msg: M, state: S): Promise<R> => {
      // A turn keeps the activation: the quiet period starts again after it.
      cancel(ctx.self, ctx.epoch);
      try {
        return await fn(ctx, msg, state);
      } finally {
        settle(ctx.self, ctx.epoch);
      }
    };
  const promptly = (turn: { self: ActorAddress; epoch: number }): void => {
    prompt.add(keyOf(turn.self, turn.epoch));
  };
  return Object.assign(guard, { promptly });
}

/** A `NOT_FOUND` with the message field it came from in its message and details. */
export function notFoundAt(err: unknown, field: string): unknown {
  if (isTroupeError(err) && err.code === ErrorCode.NOT_FOUND) {
    return new TroupeError(ErrorCode.NOT_FOUND, `${field}: ${err.message}`, {
      cause: err,
      details: { ...err.details, field },
    });
  }
  return err;
}

/**
 * Calls `send` again after a retryable failure (a store outage: the stream without a leader while
 * a NATS server is lost), pausing 250 ms doubling to 2 s, until `untilMs`; any other failure, or
 * one that leaves no time for another try, is thrown.
 */
export function retryWhileUnavailable<T>(send: () => Promise<T>, untilMs: number): Promise<T> {
  return retryWithBackoff(send, {
    isRetryable: (err) => toTroupeError(err).retryable === true,
    untilMs,
  });
}
