import type { CallRecorder, LlmCallRecord } from './call-recorder';

/** Running totals of one model in an {@link InMemoryCallRecorder}. */
export interface ModelCallTotals {
  /** Calls recorded. */
  calls: number;
  /** Calls that failed. */
  errors: number;
  /** Requests sent. */
  attempts: number;
  /** Prompt tokens. */
  promptTokens: number;
  /** Completion tokens. */
  completionTokens: number;
  /** All tokens. */
  totalTokens: number;
  /** USD spent. */
  costUsd: number;
  /** Sum of call latencies. */
  latencyMs: number;
}

/** Options of {@link InMemoryCallRecorder}. */
export interface InMemoryCallRecorderOptions {
  /** Records kept (oldest dropped first); totals count every record regardless. @default 10000 */
  maxRecords?: number;
}

/** A {@link CallRecorder} keeping recent records and per-model totals in memory. */
export class InMemoryCallRecorder implements CallRecorder {
  private readonly kept: LlmCallRecord[] = [];
  private readonly byModel = new Map<string, ModelCallTotals>();
  private readonly maxRecords: number;

  /** @param options - how many records to keep */
  constructor(options: InMemoryCallRecorderOptions = {}) {
    this.maxRecords = Math.max(0, options.maxRecords ?? 10_000);
  }

  /** Keeps `record` and adds it to its model's totals. */
  record(record: LlmCallRecord): void {
    this.kept.push(record);
    if (this.kept.length > this.maxRecords) this.kept.splice(0, this.kept.length - this.maxRecords);
    let totals = this.byModel.get(record.model);
    if (totals === undefined) {
      totals = {
        calls: 0,
        errors: 0,
        attempts: 0,
        promptTokens: 0,
        completionTokens: 0,
        totalTokens: 0,
        costUsd: 0,
        latencyMs: 0,
      };
      this.byModel.set(record.model, totals);
    }
    totals.calls += 1;
    if (record.status === 'error') totals.errors += 1;
    totals.attempts += record.attempts;
    totals.promptTokens += record.usage.promptTokens;
    totals.completionTokens += record.usage.completionTokens;
    totals.totalTokens += record.usage.totalTokens;
    totals.costUsd += record.costUsd;
    totals.latencyMs += record.latencyMs;
  }

  /** The kept records, oldest first. */
  get records(): readonly LlmCallRecord[] {
    return this.kept;
  }

  /** Totals by model name (copies). */
  totals(): Record<string, ModelCallTotals> {
    return Object.fromEntries([...this.byModel].map(([model, t]) => [model, { ...t }]));
  }

  /** Forgets records and totals. */
  reset(): void {
    this.kept.length = 0;
    this.byModel.clear();
  }
}
