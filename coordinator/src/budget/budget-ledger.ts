import { randomUUID } from 'node:crypto';
import {
  type ActorRef,
  type MessageOf,
  type MessageTypeOf,
  type RefFactory,
  type ReplyOf,
} from '@troupe/actors';
import { type ActorAddress, invalidArgument, parseWith, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import {
  type BudgetAmount,
  BudgetAmountSchema,
  type BudgetLimitsInput,
  BudgetLimitsSchema,
} from './budget-amount';
import { BudgetLedgerActor, type BudgetLedgerDefinition } from './budget-ledger-actor';
import { callWithRetry } from './internal/call-with-retry';
import { HolderSchema, RequestIdSchema, ReservationIdSchema, TtlMsSchema } from './ledger-messages';
import {
  type BudgetExhaustion,
  type LedgerSnapshot,
  type ReleaseReply,
  type ScopeUsage,
  type SettleReply,
} from './ledger-state';
import {
  ledgerActorId,
  parseLedgerRoot,
  parseScopeId,
  type ParsedScopeId,
  scopeFitsRoot,
  ScopeIdSchema,
} from './scope-id';

/** Options every ledger call takes. */
export interface BudgetCallOptions {
  /** Cancels the call. */
  signal?: AbortSignal;
  /** Deadline of the call, retries of retryable failures included. @default the ledger's `timeoutMs` */
  timeoutMs?: number;
}

/** Options of {@link BudgetLedger.reserve}. */
export interface ReserveOptions extends BudgetCallOptions {
  /**
   * How long the reservation lives unless settled or released. When its holder dies it is
   * reclaimed after this; choose more than the call's own timeout (with its retries).
   */
  ttlMs: number;
  /** Who holds it (an actor address or session id), for diagnostics. */
  holder: string;
  /**
   * Idempotency key: a reserve repeated with the same id (after a timeout, say) returns the
   * reservation made the first time instead of holding the amount twice.
   * @default a random UUID (still shared by this call's own retries)
   */
  requestId?: string;
}

/** A granted reservation. */
export interface Reservation {
  /** Reservation id, for {@link BudgetLedger.settle} / {@link BudgetLedger.release}. */
  id: string;
  scope: string;
  /** When the ledger reclaims it if neither settled nor released (ledger host clock). */
  expiresAtMs: number;
  /** The request id it was made under. */
  requestId: string;
  /** True when the request id had been seen: this is the reservation made then. */
  duplicate: boolean;
}

/** Result of {@link BudgetLedger.settle}. */
export type SettleResult = SettleReply;

/** Result of {@link BudgetLedger.release}. */
export type ReleaseResult = ReleaseReply;

/** What a caller passes to the {@link BudgetLedger} constructor. */
export interface BudgetLedgerOptions {
  /** Root scope of the tree this client talks to: `cluster` or `job:<jobId>`. @default 'cluster' */
  root?: string;
  /** Default deadline of each call. @default 10000 */
  timeoutMs?: number;
  /** The ledger actor definition hosted in the cluster (only its kind is used). @default BudgetLedgerActor */
  definition?: BudgetLedgerDefinition;
}

const ReserveInputSchema = z.object({
  scope: ScopeIdSchema,
  amount: BudgetAmountSchema,
  ttlMs: TtlMsSchema,
  holder: HolderSchema,
  requestId: RequestIdSchema,
});

const CallOptionsSchema = z.object({
  timeoutMs: z.number().int().positive({ message: 'must be a positive integer' }).optional(),
});

/**
 * Typed client of one budget tree (a `budget-ledger` actor): hard-capped budgets with
 * reservations. A model call reserves its worst case before it is sent, then settles with the
 * provider's usage (or releases when it was not sent). Inputs are validated here, so a bad field is
 * named without a round trip; retryable failures (the ledger moving to another host) are retried
 * within the deadline — every operation is idempotent.
 */
export class BudgetLedger {
  /** Root scope of the tree. */
  readonly root: string;
  private readonly parsedRoot: ParsedScopeId;
  private readonly ref: ActorRef<BudgetLedgerDefinition>;
  private readonly timeoutMs: number;

  /**
   * @param refs - an `ActorSystem` (or any ref factory, e.g. a turn's `ctx.refs`)
   * @throws TroupeError `INVALID_ARGUMENT` naming `root` or `timeoutMs`
   */
  constructor(refs: RefFactory, options: BudgetLedgerOptions = {}) {
    this.parsedRoot = parseLedgerRoot(options.root ?? 'cluster', 'root');
    this.root = this.parsedRoot.id;
    this.timeoutMs =
      parseWith(CallOptionsSchema, { timeoutMs: options.timeoutMs }).timeoutMs ?? 10_000;
    this.ref = refs.ref(options.definition ?? BudgetLedgerActor, ledgerActorId(this.root));
  }

  /** Address of the ledger actor. */
  get address(): ActorAddress {
    return this.ref.address;
  }

  /**
   * Holds `amount` (and one request) in `scope`, checked atomically against the scope and every
   * ancestor: for each, `spent + reserved + amount ≤ limit`.
   * @throws TroupeError `BUDGET_EXHAUSTED` (not retryable) whose details name the scope that would
   * overflow with its `resource`, `limit`, `spent`, `reserved` and `requested`; `INVALID_ARGUMENT`
   * naming the field (`scope`, `amount.usd`, `amount.tokens`, `ttlMs`, `holder`, `requestId`)
   */
  async reserve(
    scope: string,
    amount: BudgetAmount,
    options: ReserveOptions,
  ): Promise<Reservation> {
    const input = parseWith(ReserveInputSchema, {
      scope,
      amount,
      ttlMs: options.ttlMs,
      holder: options.holder,
      requestId: options.requestId ?? randomUUID(),
    });
    this.checkInTree(input.scope);
    const reply = await this.call(
      'reserve',
      {
        scope: input.scope,
        usd: input.amount.usd,
        tokens: input.amount.tokens,
        ttlMs: input.ttlMs,
        holder: input.holder,
        requestId: input.requestId,
      },
      options,
    );
    if (!reply.ok) throw budgetExhaustedError(reply.exhausted);
    return {
      id: reply.id,
      scope: reply.scope,
      expiresAtMs: reply.expiresAtMs,
      requestId: input.requestId,
      duplicate: reply.duplicate,
    };
  }

  /**
   * Records the actual usage of a reserved call and closes the reservation. Usage above what was
   * reserved is still recorded (the provider has charged it); the scopes it pushes over a limit are
   * listed in `overspent` and refuse further reservations. Idempotent; a settle after the
   * reservation expired is charged late (`late: true`).
   * @throws TroupeError `NOT_FOUND` for an id neither open nor recently closed
   */
  async settle(
    id: string,
    actual: BudgetAmount,
    options: BudgetCallOptions = {},
  ): Promise<SettleResult> {
    const input = parseWith(z.object({ id: ReservationIdSchema, actual: BudgetAmountSchema }), {
      id,
      actual,
    });
    return this.call(
      'settle',
      { id: input.id, usd: input.actual.usd, tokens: input.actual.tokens },
      options,
    );
  }

  /**
   * Gives a reservation back unused (the call was not sent). Idempotent: releasing a closed
   * reservation reports how it was closed.
   * @throws TroupeError `NOT_FOUND` for an id neither open nor recently closed
   */
  async release(id: string, options: BudgetCallOptions = {}): Promise<ReleaseResult> {
    const input = parseWith(z.object({ id: ReservationIdSchema }), { id });
    return this.call('release', { id: input.id }, options);
  }

  /** Limits, spent, reserved and open reservations of the subtree rooted at `scope`. */
  async get(scope: string, options: BudgetCallOptions = {}): Promise<ScopeUsage> {
    this.checkInTree(scope);
    return this.call('get', { scope }, options);
  }

  /**
   * Adds `scope` under `parent` (a job under `cluster`; an agent under its job or another agent of
   * it). Idempotent for the same parent and limits.
   * @throws TroupeError `INVALID_ARGUMENT` (ids, parent kind, unknown parent, limits),
   * `ALREADY_EXISTS` (exists with another parent or limits)
   */
  async createScope(
    scope: string,
    parent: string,
    limits: BudgetLimitsInput = {},
    options: BudgetCallOptions = {},
  ): Promise<ScopeUsage> {
    this.checkInTree(scope);
    parseScopeId(parent, 'parent');
    const parsed = parseWith(BudgetLimitsSchema, limits, { prefix: 'limits' });
    return this.call('createScope', { scope, parent, limits: parsed }, options);
  }

  /**
   * Replaces the limits of `scope` (absent or `null` = unlimited). A limit lowered below what is
   * spent and reserved keeps the open reservations and refuses new ones.
   */
  async setLimit(
    scope: string,
    limits: BudgetLimitsInput,
    options: BudgetCallOptions = {},
  ): Promise<ScopeUsage> {
    this.checkInTree(scope);
    const parsed = parseWith(BudgetLimitsSchema, limits, { prefix: 'limits' });
    return this.call('setLimit', { scope, limits: parsed }, options);
  }

  /**
   * Removes a finished scope and its subtree (their spending stays in the ancestors' totals), so a
   * long-lived tree stays bounded. Returns how many scopes were removed (0 if unknown).
   * @throws TroupeError `BUSY` while the subtree holds open reservations
   */
  async removeScope(scope: string, options: BudgetCallOptions = {}): Promise<{ removed: number }> {
    this.checkInTree(scope);
    return this.call('removeScope', { scope }, options);
  }

  /** Every scope of the tree with the ledger's counters: what the metrics endpoint reads. */
  async snapshot(options: BudgetCallOptions = {}): Promise<LedgerSnapshot> {
    return this.call('snapshot', {}, options);
  }

  private checkInTree(scope: string): void {
    const parsed = parseScopeId(scope, 'scope');
    if (!scopeFitsRoot(parsed, this.parsedRoot)) {
      throw invalidArgument(
        'scope',
        `does not belong to the ledger rooted at \`${this.root}\``,
        scope,
      );
    }
  }

  private async call<K extends MessageTypeOf<BudgetLedgerDefinition>>(
    type: K,
    msg: MessageOf<BudgetLedgerDefinition, K>,
    options: BudgetCallOptions,
  ): Promise<ReplyOf<BudgetLedgerDefinition, K>> {
    const timeoutMs =
      parseWith(CallOptionsSchema, { timeoutMs: options.timeoutMs }).timeoutMs ?? this.timeoutMs;
    return callWithRetry(
      (remainingMs) =>
        this.ref.ask(type, msg, {
          timeoutMs: remainingMs,
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      { timeoutMs, signal: options.signal },
    );
  }
}

/** The `BUDGET_EXHAUSTED` error for a refused reservation; not retryable. */
export function budgetExhaustedError(exhausted: BudgetExhaustion): TroupeError {
  const { scope, resource, limit, spent, reserved, requested } = exhausted;
  return new TroupeError(
    'BUDGET_EXHAUSTED',
    `budget of ${scope} exhausted: ${resource} spent ${spent} + reserved ${reserved} + requested ` +
      `${requested} would exceed the limit ${limit}`,
    { retryable: false, details: { ...exhausted } },
  );
}
