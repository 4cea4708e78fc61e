import { type StateStore } from '@troupe/actors';
import { type JetStreamManager } from '@nats-io/jetstream';
import { kvBucketName, stateKindFilter } from '@troupe/proto';
import { BUDGET_LEDGER_KIND } from './budget-ledger-actor';
import { type LedgerState, LedgerStateSchema } from './ledger-state';
import { ledgerRootOfActorId } from './scope-id';

/** The persisted states of the budget ledgers, and their changes (what WatchBudget follows). */
export interface LedgerStates {
  /**
   * Every ledger that has committed, by root (`cluster`, `job:<jobId>`), with the revision the
   * listing reached.
   */
  list(): Promise<LedgerListing>;
  /**
   * Each state a ledger commits after `afterRevision` (`undefined` when its state was deleted),
   * until `signal` aborts.
   */
  watch(
    afterRevision: number,
    signal: AbortSignal,
  ): AsyncIterable<{ root: string; state: LedgerState | undefined; revision: number }>;
}

/** What {@link LedgerStates.list} returns. */
export interface LedgerListing {
  /** Every ledger that has committed, by root (`cluster`, `job:<jobId>`). */
  ledgers: Map<string, LedgerState>;
  /** The revision of each listed ledger's state. */
  revisions: Map<string, number>;
  /**
   * The bucket's revision when the listing began: a watch from it misses no later commit (it may
   * repeat a commit the listing already read; compare with `revisions`).
   */
  revision: number;
}

/** What {@link LedgerStateFeed} reads: an actor system's connection and state store. */
export interface LedgerStateFeedOptions {
  /** The cluster (names the state bucket). */
  cluster: string;
  jsm: JetStreamManager;
  states: Pick<StateStore, 'read' | 'watchKind'>;
  /** Actor kind of the ledgers. @default 'budget-ledger' */
  kind?: string;
}

/**
 * {@link LedgerStates} read from where the `budget-ledger` actors persist their state: the actor
 * state bucket, one record per ledger, written by compare-and-set after every message that changes
 * it. Reading it neither activates a ledger nor queues behind its messages, and a watch of the
 * bucket sees every committed change as it is made.
 */
export class LedgerStateFeed implements LedgerStates {
  private readonly kind: string;

  constructor(private readonly options: LedgerStateFeedOptions) {
    this.kind = options.kind ?? BUDGET_LEDGER_KIND;
  }

  /**
   * The ledgers' keys come from the state stream's per-subject counts (one JetStream request) and
   * each state from a direct get: a KV key listing or history waits for the consumer to report
   * nothing pending, which under a steady stream of commits can take tens of seconds.
   */
  async list(): Promise<LedgerListing> {
    const bucket = kvBucketName(this.options.cluster, 'state');
    // A KV bucket is the stream `KV_<bucket>` with subjects `$KV.<bucket>.<key>` (nats.js).
    const prefix = `$KV.${bucket}.`;
    const info = await this.options.jsm.streams.info(`KV_${bucket}`, {
      subjects_filter: `${prefix}${stateKindFilter(this.kind)}`,
    });
    const ids = Object.keys(info.state.subjects ?? {}).map((s) =>
      s.slice(prefix.length + this.kind.length + 1),
    );
    const ledgers = new Map<string, LedgerState>();
    const revisions = new Map<string, number>();
    const read = await Promise.all(
      ids.map(async (id) => ({
        id,
        stored: await this.options.states.read({ kind: this.kind, id }),
      })),
    );
    for (const { id, stored } of read) {
      const ledger = stored && ledgerOf(id, stored.record.data);
      if (!ledger) continue;
      ledgers.set(ledger.root, ledger.state);
      revisions.set(ledger.root, stored.revision);
    }
    return { ledgers, revisions, revision: info.state.last_seq };
  }

  async *watch(
    afterRevision: number,
    signal: AbortSignal,
  ): AsyncGenerator<{ root: string; state: LedgerState | undefined; revision: number }> {
    for await (const c of this.options.states.watchKind(this.kind, afterRevision, signal)) {
      if (c.record === undefined) {
        const root = ledgerRootOfActorId(c.id);
        if (root !== undefined) yield { root, state: undefined, revision: c.revision };
        continue;
      }
      const ledger = ledgerOf(c.id, c.record.data);
      if (ledger) yield { ...ledger, revision: c.revision };
    }
  }
}

/** The ledger a record holds, or `undefined` when it is not one (another version's state). */
function ledgerOf(id: string, data: unknown): { root: string; state: LedgerState } | undefined {
  const root = ledgerRootOfActorId(id);
  const parsed = LedgerStateSchema.safeParse(data);
  if (root === undefined || !parsed.success || parsed.data.root !== root) return undefined;
  return { root, state: parsed.data };
}
