import { type JournalRecord, journalMessageId } from './journal-record';

/** The result of an append. */
export interface AppendReceipt {
  /** Position of the record in the journal (1-based, per task). */
  seq: number;
  /** True when a record with the same message id was already there: nothing was appended. */
  duplicate: boolean;
}

/** A batch of records read from a journal. */
export interface JournalRead {
  /** Records after `afterSeq`, in journal order. */
  records: JournalRecord[];
  /** Sequence of the last record returned (or `afterSeq` when none). */
  lastSeq: number;
}

/**
 * Where search journals live. Appends are idempotent by message id (see `journalMessageId`:
 * the attempt id for node records), so retrying an append never journals an attempt twice.
 */
export interface JournalStore {
  /** Appends a record to its task's journal. */
  append(record: JournalRecord, options?: { signal?: AbortSignal }): Promise<AppendReceipt>;
  /** Reads a task's records after `afterSeq` (0: from the start). */
  read(taskId: string, afterSeq?: number, options?: { signal?: AbortSignal }): Promise<JournalRead>;
}

/**
 * A journal in memory (tests, single-process tools): deduplicates by message id forever. Records
 * are stored as JSON text, so readers get copies, as they would from a stream.
 */
export class InMemoryJournalStore implements JournalStore {
  private readonly tasks = new Map<string, { ids: Set<string>; lines: string[] }>();

  async append(record: JournalRecord): Promise<AppendReceipt> {
    let task = this.tasks.get(record.taskId);
    if (!task) {
      task = { ids: new Set(), lines: [] };
      this.tasks.set(record.taskId, task);
    }
    const id = journalMessageId(record);
    if (task.ids.has(id)) return { seq: task.lines.length, duplicate: true };
    task.ids.add(id);
    task.lines.push(JSON.stringify(record));
    return { seq: task.lines.length, duplicate: false };
  }

  async read(taskId: string, afterSeq = 0): Promise<JournalRead> {
    const lines = this.tasks.get(taskId)?.lines ?? [];
    const records = lines.slice(afterSeq).map((l) => JSON.parse(l) as JournalRecord);
    return { records, lastSeq: Math.max(afterSeq, lines.length) };
  }

  /** Drops every record of a task after the first `keep` (simulates a crash in tests). */
  truncate(taskId: string, keep: number): void {
    const task = this.tasks.get(taskId);
    if (!task) return;
    task.lines = task.lines.slice(0, keep);
    task.ids = new Set(task.lines.map((l) => journalMessageId(JSON.parse(l) as JournalRecord)));
  }
}
