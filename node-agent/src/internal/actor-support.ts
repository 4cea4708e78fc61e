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

/**
 * Passivates the activation once the current turn is over: the reply is sent and the state
 * committed before it stops (calling it inside the turn and awaiting it would deadlock).
 */
export function passivateAfterTurn(
  passivate: PassivateFn | undefined,
  turn: { self: ActorAddress; epoch: number },
  log: Logger,
): void {
  if (!passivate) return;
  const { self, epoch } = turn;
  setImmediate(() => {
    passivate(self, epoch).catch((err: unknown) =>
      log.warn({ err, actor: formatAddress(self) }, 'could not passivate'),
    );
  });
}

/**
 * Wraps an actor's handlers so that, after each turn, an activation that holds no resource (its
 * id is not in `live`: never created, or destroyed) passivates and gives its slot back.
 */
export function passivateWhenIdle(
  live: { has(id: string): boolean },
  passivate: PassivateFn | undefined,
  log: Logger,
) {
  return <Ctx extends { self: ActorAddress; epoch: number }, M, S, R>(
      fn: (ctx: Ctx, msg: M, state: S) => Promise<R>,
    ) =>
    async (ctx: Ctx, msg: M, state: S): Promise<R> => {
      try {
        return await fn(ctx, msg, state);
      } finally {
        if (!live.has(ctx.self.id)) passivateAfterTurn(passivate, ctx, log);
      }
    };
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
