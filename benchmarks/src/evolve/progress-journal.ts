import {
  type AppendReceipt,
  applyJournalRecord,
  createSearchState,
  type JournalRead,
  type JournalRecord,
  type JournalStore,
  type SearchState,
} from '@troupe/evolve';
import { type GenerationPoint, islandPoints } from './fitness-series';

/** What {@link ProgressJournal} reports when a generation closes. */
export interface GenerationProgress {
  /** The generation just closed. */
  generation: number;
  /** Node records seen (evaluations with a result, failures included). */
  evaluations: number;
  /** Best validation score so far, or null. */
  bestScore: number | null;
  /**
   * Per island after the close: best and mean validation score of its members (score units) and
   * its size — the points the evolution page's curves are drawn from. Empty when the journal was
   * not seen from its task record on (the islands are then unknown).
   */
  islands: GenerationPoint['islands'];
}

/**
 * A {@link JournalStore} that passes everything to another one and watches the records go by
 * (those replayed on a resume included): it keeps the best validation score, the number of
 * evaluations and the islands (a search state replayed from the records, each applied once by its
 * journal sequence), and calls `onGeneration` whenever a generation record is appended.
 */
export class ProgressJournal implements JournalStore {
  private readonly seen = new Set<string>();
  private best: number | null = null;
  private evaluations = 0;
  private state: SearchState | undefined;
  /** Journal sequence of the last record applied to {@link state}. */
  private appliedSeq = 0;
  /** The islands are lost (a record could not be applied): report none from then on. */
  private broken = false;

  constructor(
    private readonly inner: JournalStore,
    private readonly direction: 'maximise' | 'minimise',
    private readonly onGeneration: (p: GenerationProgress) => void,
  ) {}

  /** Best validation score seen so far. */
  get bestScore(): number | null {
    return this.best;
  }

  async append(record: JournalRecord, options?: { signal?: AbortSignal }): Promise<AppendReceipt> {
    const receipt = await this.inner.append(record, options);
    this.observe(record);
    if (!receipt.duplicate) this.apply(receipt.seq, record);
    if (record.type === 'generation' && !receipt.duplicate) {
      this.onGeneration({
        generation: record.generation,
        evaluations: this.evaluations,
        bestScore: this.best,
        islands: this.state && !this.broken ? islandPoints(this.state) : [],
      });
    }
    return receipt;
  }

  async read(
    taskId: string,
    afterSeq?: number,
    options?: { signal?: AbortSignal },
  ): Promise<JournalRead> {
    const read = await this.inner.read(taskId, afterSeq, options);
    const first = read.lastSeq - read.records.length + 1;
    read.records.forEach((r, i) => {
      this.observe(r);
      this.apply(first + i, r);
    });
    return read;
  }

  /** Applies the record at journal position `seq` once, in order; a gap loses the islands. */
  private apply(seq: number, record: JournalRecord): void {
    if (this.broken || seq <= this.appliedSeq) return;
    if (seq !== this.appliedSeq + 1) {
      this.broken = true;
      return;
    }
    try {
      if (record.type === 'task' && this.state === undefined) {
        this.state = createSearchState(record);
      } else if (this.state !== undefined) {
        applyJournalRecord(this.state, record);
      } else {
        this.broken = true;
        return;
      }
      this.appliedSeq = seq;
    } catch {
      // Progress is best effort: the search itself validates its journal.
      this.broken = true;
    }
  }

  private observe(record: JournalRecord): void {
    if (record.type !== 'node' || this.seen.has(record.attemptId)) return;
    this.seen.add(record.attemptId);
    this.evaluations++;
    const score = record.outcome === 'scored' ? (record.result?.score ?? null) : null;
    if (score === null) return;
    if (
      this.best === null ||
      (this.direction === 'maximise' ? score > this.best : score < this.best)
    ) {
      this.best = score;
    }
  }
}
