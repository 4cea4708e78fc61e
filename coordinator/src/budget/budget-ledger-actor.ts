import { type ActorContext, defineActor, type HandlerResult } from '@troupe/actors';
import { invalidArgument } from '@troupe/proto';
import { LedgerMessages } from './ledger-messages';
import {
  createScope,
  DEFAULT_LEDGER_CONFIG,
  emptyLedgerState,
  expireDue,
  getScope,
  type LedgerConfig,
  type LedgerState,
  LedgerStateSchema,
  release,
  removeScope,
  reserve,
  setLimit,
  settle,
  snapshot,
  type Transition,
} from './ledger-state';
import { ledgerRootOfActorId } from './scope-id';

/** Actor kind of the budget ledger; one actor per budget tree, its id derived from the root. */
export const BUDGET_LEDGER_KIND = 'budget-ledger';

/** What a caller passes to {@link createBudgetLedgerActor}. */
export interface BudgetLedgerActorOptions extends Partial<LedgerConfig> {
  /**
   * How often a live ledger checks whether a reservation has expired and, if so, sends itself a
   * `sweep` (expiry is also applied lazily by every message).
   * @default 1000
   */
  sweepIntervalMs?: number;
  /**
   * Passivate after this long without messages (a ledger with open reservations that are due keeps
   * itself awake through its sweeps).
   * @default 600000
   */
  idleTimeoutMs?: number;
  /** Clock for expiries and rate windows (tests). @default Date.now */
  clock?: () => number;
}

interface Sweeper {
  timer: NodeJS.Timeout;
  nextExpiryAtMs: number | null;
}

/**
 * Defines the `budget-ledger` actor kind: one actor holds a whole budget tree (root `cluster` or
 * `job:<jobId>`), so that a reservation is checked against its scope and every ancestor in one
 * turn — serialisable by single activation, durable because the state is committed by CAS after
 * each message. Host it in the coordinator (`ActorSystem.start({hosting: [BudgetLedgerActor]})`)
 * and talk to it through {@link BudgetLedger}.
 */
export function createBudgetLedgerActor(options: BudgetLedgerActorOptions = {}) {
  const config: LedgerConfig = {
    maxScopes: options.maxScopes ?? DEFAULT_LEDGER_CONFIG.maxScopes,
    maxOpenReservations: options.maxOpenReservations ?? DEFAULT_LEDGER_CONFIG.maxOpenReservations,
    maxLapsed: options.maxLapsed ?? DEFAULT_LEDGER_CONFIG.maxLapsed,
  };
  const clock = options.clock ?? Date.now;
  const sweepIntervalMs = options.sweepIntervalMs ?? 1_000;
  // Per live activation (id and epoch), in this process: the expiry its timer watches.
  const sweepers = new Map<string, Sweeper>();
  const keyOf = (ctx: ActorContext<LedgerState>): string => `${ctx.self.id}@${ctx.epoch}`;

  const track = (ctx: ActorContext<LedgerState>, state: LedgerState): void => {
    const sweeper = sweepers.get(keyOf(ctx));
    if (sweeper) sweeper.nextExpiryAtMs = state.nextExpiryAtMs;
  };

  /** Runs one transition; returns a new state only when it changed (no KV write otherwise). */
  function step<R>(
    ctx: ActorContext<LedgerState>,
    state: LedgerState,
    run: (state: LedgerState, nowMs: number) => Transition<R>,
  ): HandlerResult<LedgerState, R> {
    const out = run(state, clock());
    track(ctx, out.state);
    return out.state === state ? { reply: out.reply } : { state: out.state, reply: out.reply };
  }

  const startSweeper = (ctx: ActorContext<LedgerState>, state: LedgerState): void => {
    const key = keyOf(ctx);
    const self = ctx.refs.refOf(ctx.self);
    const log = ctx.log;
    const sweeper: Sweeper = {
      nextExpiryAtMs: state.nextExpiryAtMs,
      timer: setInterval(() => {
        if (sweeper.nextExpiryAtMs === null || sweeper.nextExpiryAtMs > clock()) return;
        try {
          self.tell('sweep', {});
        } catch (err) {
          // The connection is gone (the host stopped without passivating us): stop ticking.
          log.debug({ err }, 'budget ledger sweep timer stopped');
          stopSweeper(key);
        }
      }, sweepIntervalMs),
    };
    sweeper.timer.unref();
    stopSweeper(key);
    sweepers.set(key, sweeper);
  };

  const stopSweeper = (key: string): void => {
    const sweeper = sweepers.get(key);
    if (sweeper) clearInterval(sweeper.timer);
    sweepers.delete(key);
  };

  return defineActor({
    kind: BUDGET_LEDGER_KIND,
    state: LedgerStateSchema,
    initialState: (id) => {
      const root = ledgerRootOfActorId(id);
      if (root === undefined) {
        throw invalidArgument(
          'actor id',
          'must be a budget ledger id (`cluster` or `job-<jobId>`)',
          id,
        );
      }
      return emptyLedgerState(root);
    },
    messages: LedgerMessages,
    handlers: {
      reserve: (ctx, msg, state) => step(ctx, state, (s, now) => reserve(s, msg, now, config)),
      settle: (ctx, msg, state) =>
        step(ctx, state, (s, now) =>
          settle(s, msg.id, { usd: msg.usd, tokens: msg.tokens }, now, config),
        ),
      release: (ctx, msg, state) => step(ctx, state, (s, now) => release(s, msg.id, now, config)),
      get: (ctx, msg, state) => step(ctx, state, (s, now) => getScope(s, msg.scope, now, config)),
      createScope: (ctx, msg, state) =>
        step(ctx, state, (s, now) => createScope(s, msg, now, config)),
      setLimit: (ctx, msg, state) =>
        step(ctx, state, (s, now) => setLimit(s, msg.scope, msg.limits, now, config)),
      removeScope: (ctx, msg, state) =>
        step(ctx, state, (s, now) => removeScope(s, msg.scope, now, config)),
      snapshot: (ctx, _msg, state) => step(ctx, state, (s, now) => snapshot(s, now, config)),
      sweep: (ctx, _msg, state) =>
        step(ctx, state, (s, now) => {
          const next = expireDue(s, now, config);
          return {
            state: next,
            reply: { expired: next.counters.expired - s.counters.expired },
          };
        }),
    },
    onActivate: (ctx, state) => {
      startSweeper(ctx, state);
      // Reservations that expired while the ledger slept (or its host was down) go first.
      const swept = expireDue(state, clock(), config);
      track(ctx, swept);
      return swept === state ? undefined : { state: swept };
    },
    onDeactivate: (ctx) => {
      stopSweeper(keyOf(ctx));
    },
    idleTimeoutMs: options.idleTimeoutMs ?? 600_000,
  });
}

/** The type of a `budget-ledger` definition made by {@link createBudgetLedgerActor}. */
export type BudgetLedgerDefinition = ReturnType<typeof createBudgetLedgerActor>;

/** The `budget-ledger` actor kind with default options. */
export const BudgetLedgerActor: BudgetLedgerDefinition = createBudgetLedgerActor();
