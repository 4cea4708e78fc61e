import type { AppendReceipt, JournalRead, JournalRecord, JournalStore } from '@troupe/evolve';

/**
 * A {@link JournalStore} that passes everything to another one and shows every record it
 * appends or reads (those replayed on a resume included) to `observe`.
 */
export class ObservingJournal implements JournalStore {
  constructor(
    private readonly inner: JournalStore,
    private readonly observe: (record: JournalRecord) => void,
  ) {}

  async append(record: JournalRecord, options?: { signal?: AbortSignal }): Promise<AppendReceipt> {
    const receipt = await this.inner.append(record, options);
    this.observe(record);
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
}
