import type { AppendReceipt, JournalRead, JournalRecord, JournalStore } from '@troupe/evolve';

/** What {@link ProgressJournal} reports when a generation closes. */
export interface GenerationProgress {
  /** The generation just closed. */
  generation: number;
  /** Node records seen (evaluations with a result, failures included). */
  evaluations: number;
  /** Best validation score so far, or null. */
  bestScore: number | null;
}

/**
 * A {@link JournalStore} that passes everything to another one and watches the records go by
 * (those replayed on a resume included): it keeps the best validation score and the number of
 * evaluations, and calls `onGeneration` whenever a generation record is appended.
 */
export class ProgressJournal implements JournalStore {
  private readonly seen = new Set<string>();
  private best: number | null = null;
  private evaluations = 0;

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
    if (record.type === 'generation' && !receipt.duplicate) {
      this.onGeneration({
        generation: record.generation,
        evaluations: this.evaluations,
        bestScore: this.best,
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
    for (const r of read.records) this.observe(r);
    return read;
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
