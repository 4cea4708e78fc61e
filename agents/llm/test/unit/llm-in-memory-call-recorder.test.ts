import type { LlmCallRecord } from '../../src/call-recorder';
import { InMemoryCallRecorder } from '../../src/in-memory-call-recorder';

function rec(model: string, overrides: Partial<LlmCallRecord> = {}): LlmCallRecord {
  return {
    model,
    requestId: 'r',
    startedAtMs: 0,
    latencyMs: 10,
    attempts: 1,
    usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 },
    usageEstimated: false,
    costUsd: 0.5,
    status: 'ok',
    streamed: false,
    ...overrides,
  };
}

describe('InMemoryCallRecorder', () => {
  it('keeps per-model totals beyond the kept records', () => {
    const recorder = new InMemoryCallRecorder({ maxRecords: 2 });
    recorder.record(rec('a'));
    recorder.record(rec('a', { status: 'error', attempts: 3, costUsd: 0 }));
    recorder.record(rec('b'));
    expect(recorder.records.map((r) => r.model)).toEqual(['a', 'b']);
    expect(recorder.totals()).toEqual({
      a: {
        calls: 2,
        errors: 1,
        attempts: 4,
        promptTokens: 20,
        completionTokens: 10,
        totalTokens: 30,
        costUsd: 0.5,
        latencyMs: 20,
      },
      b: expect.objectContaining({ calls: 1, costUsd: 0.5 }),
    });
    recorder.reset();
    expect(recorder.records).toHaveLength(0);
    expect(recorder.totals()).toEqual({});
  });
});
