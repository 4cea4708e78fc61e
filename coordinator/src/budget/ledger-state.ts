import { invalidArgument, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import {
  type BudgetAmount,
  type BudgetLimits,
  type BudgetLimitsInput,
  type BudgetTotals,
  nanosToUsd,
  usdToNanos,
} from './budget-amount';
import { checkParentKind, parseScopeId, scopeFitsRoot } from './scope-id';

// The budget ledger as pure state transitions: every function takes the current state and returns
// the next one (the input is never mutated, so a turn that throws leaves the actor's state as it
// was) plus the reply. The `budget-ledger` actor runs them one message at a time, which makes every
// check-and-reserve across a scope's ancestor chain atomic, and commits the result by CAS.
//
// Each scope keeps *subtree* totals: reserving at `agent:j/s` adds the amount to that scope and to
// every ancestor, so comparing a scope's totals with its own limit caps its whole subtree, and
// `get(scope)` is a lookup, not a walk.

/** Triples are indexed [usd (nano-dollars), tokens, requests]. */
const USD = 0;
const TOKENS = 1;
const REQUESTS = 2;
const RESOURCES = ['usd', 'tokens', 'requests'] as const;

/** A budget dimension: dollars, tokens or model calls. */
export type BudgetResource = (typeof RESOURCES)[number];

const Count = z.number().int().nonnegative();
const TripleSchema = z.tuple([Count, Count, Count]);
const LimitTripleSchema = z.tuple([Count.nullable(), Count.nullable(), Count.nullable()]);

/** One scope: its parent, limits and subtree totals (triples of [usd nanos, tokens, requests]). */
export const ScopeRecordSchema = z.object({
  /** Parent scope id; `null` for the root. */
  parent: z.string().nullable(),
  /** Limits; `null` = unlimited. */
  limit: LimitTripleSchema,
  /** Settled usage of the subtree. */
  spent: TripleSchema,
  /** Held by open reservations in the subtree. */
  reserved: TripleSchema,
  /** Open reservations in the subtree. */
  open: Count,
});
/** A persisted scope. */
export type ScopeRecord = z.infer<typeof ScopeRecordSchema>;

/** An open reservation (amounts in nano-dollars and tokens; it also holds one request). */
export const OpenReservationSchema = z.object({
  scope: z.string(),
  usd: Count,
  tokens: Count,
  /** Expiry, ms since the epoch (ledger host clock). */
  exp: Count,
  holder: z.string(),
  /** The caller's request id (idempotency key of `reserve`). */
  req: z.string(),
});
/** A persisted open reservation. */
export type OpenReservation = z.infer<typeof OpenReservationSchema>;

const Outcome = z.enum(['r', 'e']);
/**
 * A reservation that was released or expired, remembered (bounded) so that a late settle is still
 * charged to its scope and a repeated release reports it: `[id, outcome (released|expired), scope]`.
 *
 * Settled reservations need no entry: ids are sequential, so an id the ledger has issued that is
 * neither open nor lapsed has been settled. Keeping only lapsed ones (rare: a dead holder, a call
 * not sent) keeps the state small — the runtime validates and writes all of it per message.
 */
export const LapsedReservationSchema = z.tuple([z.string(), Outcome, z.string()]);
type LapsedReservation = z.infer<typeof LapsedReservationSchema>;

/** Counters since the ledger was created. */
export const LedgerCountersSchema = z.object({
  reserved: Count,
  refused: Count,
  settled: Count,
  released: Count,
  expired: Count,
  /** Settles that arrived after their reservation had expired or been released. */
  lateSettled: Count,
  /** Settles that left a scope above one of its limits. */
  overspent: Count,
});
/** Ledger counters. */
export type LedgerCounters = z.infer<typeof LedgerCountersSchema>;

/** The whole persisted state of one budget tree. */
export const LedgerStateSchema = z.object({
  v: z.literal(1),
  /** Root scope id (`cluster` or `job:<jobId>`). */
  root: z.string(),
  /** Last reservation sequence number (reservation ids are `r<seq base 36>`). */
  seq: Count,
  scopes: z.record(z.string(), ScopeRecordSchema),
  open: z.record(z.string(), OpenReservationSchema),
  lapsed: z.array(LapsedReservationSchema),
  /** No open reservation expires before this (a lower bound; `null` = none open). */
  nextExpiryAtMs: Count.nullable(),
  counters: LedgerCountersSchema,
});
/** The persisted state of one budget tree. */
export type LedgerState = z.infer<typeof LedgerStateSchema>;

/** Bounds that keep the state small enough for one KV value. */
export interface LedgerConfig {
  /** Scopes in the tree, root included. */
  maxScopes: number;
  /** Open reservations at once. */
  maxOpenReservations: number;
  /**
   * Released or expired reservations remembered (for late settles and retried reserves); a settle
   * of one forgotten since is taken for a repeated settle and not charged.
   */
  maxLapsed: number;
}

/** Defaults of {@link LedgerConfig}: about 0.5 MB of state at the worst. */
export const DEFAULT_LEDGER_CONFIG: Readonly<LedgerConfig> = {
  maxScopes: 1_000,
  maxOpenReservations: 2_000,
  maxLapsed: 1_000,
};

/** Reservation ids the ledger hands out. */
export const RESERVATION_ID_PATTERN = /^r[0-9a-z]{1,16}$/;

/** A scope's limits, totals and rollup as `get` reports them (dollars in USD). */
export interface ScopeUsage {
  scope: string;
  /** Parent scope id; `null` for the root. */
  parent: string | null;
  /** Limits of this scope (`null` = unlimited). */
  limit: BudgetLimits;
  /** Settled usage of the whole subtree. */
  spent: BudgetTotals;
  /** Held by open reservations anywhere in the subtree. */
  reserved: BudgetTotals;
  /** Open reservations in the subtree. */
  reservations: number;
  /** `limit − spent − reserved` of this scope (`null` = unlimited; negative after an overspend). */
  remaining: BudgetLimits;
  /**
   * What a new reservation here could take: the smallest `remaining` along the chain up to the
   * root (`null` = unlimited everywhere).
   */
  available: BudgetLimits;
  /** No model call fits: no dollars, no tokens or no request left here or in an ancestor. */
  exhausted: boolean;
}

/** Why a reservation was refused: the scope that would overflow and its numbers. */
export interface BudgetExhaustion {
  /** The scope a reservation was requested in. */
  requestedScope: string;
  /** The scope (that one or an ancestor) whose limit would be exceeded. */
  scope: string;
  resource: BudgetResource;
  limit: number;
  spent: number;
  reserved: number;
  requested: number;
}

/** Reply of {@link reserve}. */
export type ReserveReply =
  | {
      ok: true;
      id: string;
      scope: string;
      expiresAtMs: number;
      /** The request id had been seen: this is the reservation made then, nothing new was held. */
      duplicate: boolean;
    }
  | { ok: false; exhausted: BudgetExhaustion };

/** Reply of {@link settle}. */
export interface SettleReply {
  id: string;
  status: 'settled';
  /** Already settled: nothing was recorded this time. */
  duplicate: boolean;
  /** The reservation had expired or been released; the usage was still charged. */
  late: boolean;
  /**
   * Scopes where this settle's usage beyond what was reserved left `spent + reserved > limit`;
   * they refuse reservations until usage falls back under the limit or the limit is raised.
   */
  overspent: string[];
}

/** Reply of {@link release}. */
export interface ReleaseReply {
  id: string;
  /** How the reservation is closed: by this release, or earlier (then `duplicate`). */
  status: 'released' | 'settled' | 'expired';
  duplicate: boolean;
}

/** Reply of {@link snapshot}: every scope of the tree, for metrics. */
export interface LedgerSnapshot {
  root: string;
  /** Ledger clock when the snapshot was taken. */
  atMs: number;
  scopes: ScopeUsage[];
  counters: LedgerCounters;
  openReservations: number;
  /** The open reservations, oldest first (dollars in USD). */
  reservations: OpenReservationView[];
}

/** An open reservation as {@link snapshot} reports it. */
export interface OpenReservationView {
  id: string;
  scope: string;
  usd: number;
  tokens: number;
  holder: string;
  /** When the ledger reclaims it unless settled or released (ledger host clock). */
  expiresAtMs: number;
}

/** A transition's result. `state` is the input object itself when nothing changed. */
export interface Transition<R> {
  state: LedgerState;
  reply: R;
}

/** The state of a ledger that has never committed: the root alone, unlimited. */
export function emptyLedgerState(root: string): LedgerState {
  return {
    v: 1,
    root,
    seq: 0,
    scopes: { [root]: newScope(null, [null, null, null]) },
    open: {},
    lapsed: [],
    nextExpiryAtMs: null,
    counters: {
      reserved: 0,
      refused: 0,
      settled: 0,
      released: 0,
      expired: 0,
      lateSettled: 0,
      overspent: 0,
    },
  };
}

/** Input of {@link reserve} (validated by the caller's schema). */
export interface ReserveInput {
  scope: string;
  usd: number;
  tokens: number;
  ttlMs: number;
  holder: string;
  requestId: string;
}

/**
 * Holds `usd`/`tokens` and one request in `scope` if, for that scope and every ancestor and every
 * limited resource, `spent + reserved + amount ≤ limit`; otherwise refuses (and counts the
 * refusal) naming the first scope, leaf first, that would overflow. A `requestId` of a reservation
 * that is still open returns that reservation, holding nothing twice: a reserve is retried only
 * after its reply was lost, and a caller without the reply cannot have settled or released it. If
 * it has expired meanwhile its hold is gone, and the retry makes a new reservation.
 */
export function reserve(
  state: LedgerState,
  input: ReserveInput,
  nowMs: number,
  config: LedgerConfig = DEFAULT_LEDGER_CONFIG,
): Transition<ReserveReply> {
  const s = expireDue(state, nowMs, config);
  requireScope(s, input.scope, 'scope');
  const usd = usdToNanos(input.usd);
  const amount: Triple = [usd, input.tokens, 1];
  const seen = findByRequestId(s, input.requestId);
  if (seen) {
    if (seen.scope !== input.scope || seen.usd !== usd || seen.tokens !== input.tokens) {
      throw invalidArgument(
        'requestId',
        'was already used for a reservation with another scope or amount',
        input.requestId,
      );
    }
    return {
      state: s,
      reply: { ok: true, id: seen.id, scope: seen.scope, expiresAtMs: seen.exp, duplicate: true },
    };
  }
  const chain = chainOf(s, input.scope);
  for (const id of chain) {
    const rec = s.scopes[id] as ScopeRecord;
    for (let r = 0; r < 3; r++) {
      const limit = rec.limit[r];
      const want = amount[r] as number;
      if (
        limit !== null &&
        limit !== undefined &&
        rec.spent[r]! + rec.reserved[r]! + want > limit
      ) {
        const d = new Draft(s);
        d.state.counters.refused++;
        return {
          state: d.state,
          reply: {
            ok: false,
            exhausted: {
              requestedScope: input.scope,
              scope: id,
              resource: RESOURCES[r]!,
              limit: display(r, limit),
              spent: display(r, rec.spent[r]!),
              reserved: display(r, rec.reserved[r]!),
              requested: display(r, want),
            },
          },
        };
      }
    }
  }
  if ((s.scopes[s.root] as ScopeRecord).open >= config.maxOpenReservations) {
    throw new TroupeError(
      'UNAVAILABLE',
      `budget ledger ${s.root} holds ${config.maxOpenReservations} open reservations (its maximum)`,
      { details: { root: s.root, maxOpenReservations: config.maxOpenReservations } },
    );
  }
  const d = new Draft(s);
  const id = `r${(++d.state.seq).toString(36)}`;
  const exp = nowMs + input.ttlMs;
  for (const scope of chain) {
    const rec = d.scope(scope);
    add(rec.reserved, amount, 1);
    rec.open++;
  }
  d.state.open[id] = {
    scope: input.scope,
    usd,
    tokens: input.tokens,
    exp,
    holder: input.holder,
    req: input.requestId,
  };
  d.state.nextExpiryAtMs =
    d.state.nextExpiryAtMs === null ? exp : Math.min(d.state.nextExpiryAtMs, exp);
  d.state.counters.reserved++;
  return {
    state: d.state,
    reply: { ok: true, id, scope: input.scope, expiresAtMs: exp, duplicate: false },
  };
}

/**
 * Records actual usage and closes the reservation. Actual usage may exceed what was reserved: it
 * is recorded anyway (the provider has already charged) and the scopes it pushes over a limit are
 * reported in `overspent` — they refuse every reservation until their limit is raised. Settling an
 * already settled reservation is a no-op; settling one that expired or was released charges the
 * usage late.
 * @throws TroupeError `NOT_FOUND` when this ledger never issued the id
 */
export function settle(
  state: LedgerState,
  id: string,
  actual: BudgetAmount,
  nowMs: number,
  config: LedgerConfig = DEFAULT_LEDGER_CONFIG,
): Transition<SettleReply> {
  checkReservationId(id);
  const s = expireDue(state, nowMs, config);
  const used: Triple = [usdToNanos(actual.usd), actual.tokens, 1];
  const open = own(s.open, id);
  if (open) {
    const d = new Draft(s);
    const chain = chainOf(s, open.scope);
    d.closeOpen(id, open, undefined, chain, config);
    for (const scope of chain) add(d.scope(scope).spent, used, 1);
    d.state.counters.settled++;
    const beyond = used[USD] > open.usd || used[TOKENS] > open.tokens;
    const overspent = beyond ? overspentScopes(d.state, chain) : [];
    if (overspent.length > 0) d.state.counters.overspent++;
    return {
      state: d.state,
      reply: { id, status: 'settled', duplicate: false, late: false, overspent },
    };
  }
  const index = findLapsed(s, id);
  if (index < 0) {
    if (!issued(s, id)) throw unknownReservation(id, s);
    return {
      state: s,
      reply: { id, status: 'settled', duplicate: true, late: false, overspent: [] },
    };
  }
  const lapsed = s.lapsed[index] as LapsedReservation;
  const d = new Draft(s);
  const chain = chainOf(s, lapsed[2]);
  for (const scope of chain) add(d.scope(scope).spent, used, 1);
  // Settled now, so it needs no entry any more (see LapsedReservationSchema).
  d.state.lapsed = s.lapsed.filter((_, i) => i !== index);
  d.state.counters.settled++;
  d.state.counters.lateSettled++;
  // Nothing was held for it any more: any usage is beyond the reservation.
  const overspent = overspentScopes(d.state, chain);
  if (overspent.length > 0) d.state.counters.overspent++;
  return {
    state: d.state,
    reply: { id, status: 'settled', duplicate: false, late: true, overspent },
  };
}

/**
 * Gives a reservation back unused. Releasing a reservation that is already closed is a no-op that
 * reports how it was closed.
 * @throws TroupeError `NOT_FOUND` when this ledger never issued the id
 */
export function release(
  state: LedgerState,
  id: string,
  nowMs: number,
  config: LedgerConfig = DEFAULT_LEDGER_CONFIG,
): Transition<ReleaseReply> {
  checkReservationId(id);
  const s = expireDue(state, nowMs, config);
  const open = own(s.open, id);
  if (open) {
    const d = new Draft(s);
    d.closeOpen(id, open, 'r', chainOf(s, open.scope), config);
    d.state.counters.released++;
    return { state: d.state, reply: { id, status: 'released', duplicate: false } };
  }
  const index = findLapsed(s, id);
  if (index < 0) {
    if (!issued(s, id)) throw unknownReservation(id, s);
    return { state: s, reply: { id, status: 'settled', duplicate: true } };
  }
  const outcome = (s.lapsed[index] as LapsedReservation)[1];
  return {
    state: s,
    reply: { id, status: outcome === 'r' ? 'released' : 'expired', duplicate: true },
  };
}

/**
 * Reclaims every open reservation whose expiry has passed (its holder is presumed dead). Returns
 * the input object itself when nothing was due.
 */
export function expireDue(
  state: LedgerState,
  nowMs: number,
  config: LedgerConfig = DEFAULT_LEDGER_CONFIG,
): LedgerState {
  if (state.nextExpiryAtMs === null || state.nextExpiryAtMs > nowMs) return state;
  const d = new Draft(state);
  let next: number | null = null;
  for (const [id, r] of Object.entries(state.open)) {
    if (r.exp <= nowMs) {
      d.closeOpen(id, r, 'e', chainOf(state, r.scope), config);
      d.state.counters.expired++;
    } else {
      next = next === null ? r.exp : Math.min(next, r.exp);
    }
  }
  d.state.nextExpiryAtMs = next;
  return d.state;
}

/** Input of {@link createScope}. */
export interface CreateScopeInput {
  scope: string;
  parent: string;
  limits?: BudgetLimitsInput | undefined;
}

/**
 * Adds `scope` under `parent` with `limits`. Creating a scope that exists with the same parent and
 * limits is a no-op (so a retried create succeeds).
 * @throws TroupeError `INVALID_ARGUMENT` (bad ids, wrong parent kind, unknown parent, another
 * tree's scope), `ALREADY_EXISTS` (exists with another parent or limits), `UNAVAILABLE` (the tree
 * is at `maxScopes`)
 */
export function createScope(
  state: LedgerState,
  input: CreateScopeInput,
  nowMs: number,
  config: LedgerConfig = DEFAULT_LEDGER_CONFIG,
): Transition<ScopeUsage> {
  const s = expireDue(state, nowMs, config);
  const scope = parseScopeId(input.scope, 'scope');
  const root = parseScopeId(s.root, 'root');
  if (scope.id === s.root) {
    throw invalidArgument(
      'scope',
      'is the root of this ledger; it always exists (use setLimit)',
      scope.id,
    );
  }
  if (!scopeFitsRoot(scope, root)) {
    throw invalidArgument(
      'scope',
      `does not belong to the ledger rooted at \`${s.root}\``,
      scope.id,
    );
  }
  checkParentKind(scope, parseScopeId(input.parent, 'parent'));
  requireScope(s, input.parent, 'parent');
  const limit = limitTriple(input.limits);
  const existing = own(s.scopes, scope.id);
  if (existing) {
    if (existing.parent === input.parent && sameTriple(existing.limit, limit)) {
      return { state: s, reply: usageOf(s, scope.id) };
    }
    throw new TroupeError(
      'ALREADY_EXISTS',
      `budget scope ${scope.id} already exists under ${existing.parent ?? '(root)'} with other limits or parent`,
      { details: { scope: scope.id, parent: existing.parent } },
    );
  }
  if (Object.keys(s.scopes).length >= config.maxScopes) {
    throw new TroupeError(
      'UNAVAILABLE',
      `budget ledger ${s.root} holds ${config.maxScopes} scopes (its maximum); remove finished ones`,
      { retryable: false, details: { root: s.root, maxScopes: config.maxScopes } },
    );
  }
  const d = new Draft(s);
  d.state.scopes[scope.id] = newScope(input.parent, limit);
  return { state: d.state, reply: usageOf(d.state, scope.id) };
}

/**
 * Replaces the limits of `scope` (absent or `null` = unlimited). Lowering a limit below what is
 * already spent and reserved is allowed: open reservations stay valid, and new ones are refused
 * until the scope is back under its limit.
 */
export function setLimit(
  state: LedgerState,
  scope: string,
  limits: BudgetLimitsInput,
  nowMs: number,
  config: LedgerConfig = DEFAULT_LEDGER_CONFIG,
): Transition<ScopeUsage> {
  const s = expireDue(state, nowMs, config);
  requireScope(s, scope, 'scope');
  const limit = limitTriple(limits);
  if (sameTriple((s.scopes[scope] as ScopeRecord).limit, limit)) {
    return { state: s, reply: usageOf(s, scope) };
  }
  const d = new Draft(s);
  d.scope(scope).limit = limit;
  return { state: d.state, reply: usageOf(d.state, scope) };
}

/**
 * Removes a finished scope and its subtree from the tree, keeping their spending in the ancestors'
 * totals (so the state stays bounded over many jobs). Removing an unknown scope is a no-op.
 * @throws TroupeError `BUSY` while the subtree holds open reservations; `INVALID_ARGUMENT` for the root
 */
export function removeScope(
  state: LedgerState,
  scope: string,
  nowMs: number,
  config: LedgerConfig = DEFAULT_LEDGER_CONFIG,
): Transition<{ removed: number }> {
  parseScopeId(scope, 'scope');
  const s = expireDue(state, nowMs, config);
  if (scope === s.root) throw invalidArgument('scope', 'is the root of this ledger', scope);
  const rec = own(s.scopes, scope);
  if (!rec) return { state: s, reply: { removed: 0 } };
  if (rec.open > 0) {
    throw new TroupeError(
      'BUSY',
      `budget scope ${scope} has ${rec.open} open reservations; settle or release them first`,
      { details: { scope, reservations: rec.open } },
    );
  }
  const gone = new Set<string>();
  for (const id of Object.keys(s.scopes)) {
    if (chainOf(s, id).includes(scope)) gone.add(id);
  }
  const d = new Draft(s);
  for (const id of gone) delete d.state.scopes[id];
  // Lapsed entries of removed scopes now charge a late settle to the nearest surviving ancestor.
  d.state.lapsed = s.lapsed.map((c) => (gone.has(c[2]) ? [c[0], c[1], rec.parent as string] : c));
  return { state: d.state, reply: { removed: gone.size } };
}

/** Limits, totals and rollup of `scope` (after reclaiming expired reservations). */
export function getScope(
  state: LedgerState,
  scope: string,
  nowMs: number,
  config: LedgerConfig = DEFAULT_LEDGER_CONFIG,
): Transition<ScopeUsage> {
  const s = expireDue(state, nowMs, config);
  requireScope(s, scope, 'scope');
  return { state: s, reply: usageOf(s, scope) };
}

/** Every scope of the tree with the counters (after reclaiming expired reservations). */
export function snapshot(
  state: LedgerState,
  nowMs: number,
  config: LedgerConfig = DEFAULT_LEDGER_CONFIG,
): Transition<LedgerSnapshot> {
  const s = expireDue(state, nowMs, config);
  return {
    state: s,
    reply: {
      root: s.root,
      atMs: nowMs,
      scopes: Object.keys(s.scopes).map((id) => usageOf(s, id)),
      counters: { ...s.counters },
      openReservations: (s.scopes[s.root] as ScopeRecord).open,
      reservations: Object.entries(s.open)
        .map(([id, r]) => ({
          id,
          scope: r.scope,
          usd: nanosToUsd(r.usd),
          tokens: r.tokens,
          holder: r.holder,
          expiresAtMs: r.exp,
        }))
        // Ids are `r` + a base-36 sequence: shorter is older, then lexical.
        .sort((a, b) => a.id.length - b.id.length || (a.id < b.id ? -1 : 1)),
    },
  };
}

/**
 * Checks the invariant `spent + reserved ≤ limit` of every scope and the consistency of the
 * subtree totals with the open reservations; returns the violations (empty when sound). Scopes
 * overspent by a settle beyond the reservation, or whose limit was lowered, are reported as such.
 */
export function checkLedger(state: LedgerState): string[] {
  const problems: string[] = [];
  const reserved = new Map<string, Triple>();
  const open = new Map<string, number>();
  for (const r of Object.values(state.open)) {
    for (const id of chainOf(state, r.scope)) {
      const t = reserved.get(id) ?? [0, 0, 0];
      add(t, [r.usd, r.tokens, 1], 1);
      reserved.set(id, t);
      open.set(id, (open.get(id) ?? 0) + 1);
    }
  }
  for (const [id, rec] of Object.entries(state.scopes)) {
    if (!sameTriple(rec.reserved, reserved.get(id) ?? [0, 0, 0])) {
      problems.push(`${id}: reserved ${rec.reserved.join('/')} does not match open reservations`);
    }
    if (rec.open !== (open.get(id) ?? 0)) problems.push(`${id}: open count ${rec.open} is wrong`);
    for (let r = 0; r < 3; r++) {
      const limit = rec.limit[r];
      if (limit !== null && limit !== undefined && rec.spent[r]! + rec.reserved[r]! > limit) {
        problems.push(`${id}: ${RESOURCES[r]} spent + reserved > limit`);
      }
    }
  }
  return problems;
}

// ---- helpers ------------------------------------------------------------------------------------

type Triple = [number, number, number];
type LimitTriple = [number | null, number | null, number | null];

/** Copy-on-write view of a state: the input's scope records and arrays are never written. */
class Draft {
  readonly state: LedgerState;
  private readonly copied = new Set<string>();

  constructor(base: LedgerState) {
    this.state = {
      ...base,
      scopes: { ...base.scopes },
      open: { ...base.open },
      counters: { ...base.counters },
    };
  }

  /** A private copy of one scope record, safe to write. */
  scope(id: string): ScopeRecord {
    const current = this.state.scopes[id] as ScopeRecord;
    if (this.copied.has(id)) return current;
    const copy: ScopeRecord = {
      parent: current.parent,
      limit: [...current.limit],
      spent: [...current.spent],
      reserved: [...current.reserved],
      open: current.open,
    };
    this.state.scopes[id] = copy;
    this.copied.add(id);
    return copy;
  }

  /**
   * Removes an open reservation and gives its hold back along `chain`. A released or expired one
   * (`lapsed` set) is remembered; a settled one (`undefined`) needs no entry.
   */
  closeOpen(
    id: string,
    r: OpenReservation,
    lapsed: LapsedReservation[1] | undefined,
    chain: readonly string[],
    config: LedgerConfig,
  ): void {
    for (const scope of chain) {
      const rec = this.scope(scope);
      add(rec.reserved, [r.usd, r.tokens, 1], -1);
      rec.open--;
    }
    delete this.state.open[id];
    if (lapsed === undefined) return;
    const entry: LapsedReservation = [id, lapsed, r.scope];
    const all = [...this.state.lapsed, entry];
    this.state.lapsed =
      all.length > config.maxLapsed ? all.slice(all.length - config.maxLapsed) : all;
  }
}

function newScope(parent: string | null, limit: LimitTriple): ScopeRecord {
  return { parent, limit, spent: [0, 0, 0], reserved: [0, 0, 0], open: 0 };
}

function add(target: number[], amount: readonly number[], sign: 1 | -1): void {
  for (let r = 0; r < 3; r++) target[r] = (target[r] as number) + sign * (amount[r] as number);
}

function sameTriple(a: readonly (number | null)[], b: readonly (number | null)[]): boolean {
  return a[0] === b[0] && a[1] === b[1] && a[2] === b[2];
}

function limitTriple(limits: BudgetLimitsInput | undefined): LimitTriple {
  return [
    limits?.usd === undefined || limits.usd === null ? null : usdToNanos(limits.usd),
    limits?.tokens ?? null,
    limits?.requests ?? null,
  ];
}

/** Value of resource `r` as reported (dollars in USD). */
function display(r: number, value: number): number {
  return r === USD ? nanosToUsd(value) : value;
}

function totals(t: readonly number[]): BudgetTotals {
  return { usd: nanosToUsd(t[USD]!), tokens: t[TOKENS]!, requests: t[REQUESTS]! };
}

function remainingOf(rec: ScopeRecord): LimitTriple {
  return rec.limit.map((limit, r) =>
    limit === null ? null : limit - rec.spent[r]! - rec.reserved[r]!,
  ) as LimitTriple;
}

function limits(t: LimitTriple): BudgetLimits {
  return {
    usd: t[USD] === null ? null : nanosToUsd(t[USD]),
    tokens: t[TOKENS],
    requests: t[REQUESTS],
  };
}

function usageOf(state: LedgerState, scope: string): ScopeUsage {
  const rec = state.scopes[scope] as ScopeRecord;
  const remaining = remainingOf(rec);
  const available: LimitTriple = [null, null, null];
  for (const id of chainOf(state, scope)) {
    const rem = remainingOf(state.scopes[id] as ScopeRecord);
    for (let r = 0; r < 3; r++) {
      const v = rem[r] as number | null;
      const cur = available[r] as number | null;
      if (v !== null) available[r] = cur === null ? v : Math.min(cur, v);
    }
  }
  const exhausted =
    (available[USD] !== null && available[USD] <= 0) ||
    (available[TOKENS] !== null && available[TOKENS] <= 0) ||
    (available[REQUESTS] !== null && available[REQUESTS] < 1);
  return {
    scope,
    parent: rec.parent,
    limit: limits(rec.limit),
    spent: totals(rec.spent),
    reserved: totals(rec.reserved),
    reservations: rec.open,
    remaining: limits(remaining),
    available: limits(available),
    exhausted,
  };
}

/** Scopes of `chain` where `spent + reserved > limit` for some resource. */
function overspentScopes(state: LedgerState, chain: readonly string[]): string[] {
  return chain.filter((id) => {
    const rec = state.scopes[id] as ScopeRecord;
    return rec.limit.some((limit, r) => limit !== null && rec.spent[r]! + rec.reserved[r]! > limit);
  });
}

/** `scope`, its parent, …, the root. */
function chainOf(state: LedgerState, scope: string): string[] {
  const chain: string[] = [];
  let id: string | null = scope;
  while (id !== null) {
    const rec: ScopeRecord | undefined = own(state.scopes, id);
    // Chains are a few scopes deep, so the cycle check is cheap (a corrupt state must not hang us).
    if (!rec || chain.includes(id)) {
      throw new TroupeError(
        'INTERNAL',
        `budget ledger ${state.root}: broken parent chain at ${id}`,
      );
    }
    chain.push(id);
    id = rec.parent;
  }
  return chain;
}

/** `record[key]` for own keys only (ids are untrusted input; `constructor` is not a scope). */
function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function requireScope(state: LedgerState, scope: string, field: string): void {
  parseScopeId(scope, field);
  if (!own(state.scopes, scope)) {
    throw invalidArgument(
      field,
      `must be a scope of the ledger rooted at \`${state.root}\` (create it first)`,
      scope,
    );
  }
}

function checkReservationId(id: string): void {
  if (!RESERVATION_ID_PATTERN.test(id)) {
    throw invalidArgument('id', 'must be a reservation id returned by reserve (r…)', id);
  }
}

function findLapsed(state: LedgerState, id: string): number {
  for (let i = state.lapsed.length - 1; i >= 0; i--) {
    if ((state.lapsed[i] as LapsedReservation)[0] === id) return i;
  }
  return -1;
}

/** Whether this ledger has handed out `id` (ids are `r` + the base-36 sequence number). */
function issued(state: LedgerState, id: string): boolean {
  const seq = parseInt(id.slice(1), 36);
  return seq >= 1 && seq <= state.seq;
}

function findByRequestId(
  state: LedgerState,
  requestId: string,
): { id: string; scope: string; usd: number; tokens: number; exp: number } | undefined {
  for (const id in state.open) {
    const r = state.open[id] as OpenReservation;
    if (r.req === requestId)
      return { id, scope: r.scope, usd: r.usd, tokens: r.tokens, exp: r.exp };
  }
  return undefined;
}

function unknownReservation(id: string, state: LedgerState): TroupeError {
  return new TroupeError(
    'NOT_FOUND',
    `reservation ${id} was never issued by the budget ledger of ${state.root}`,
    { details: { id, root: state.root } },
  );
}
