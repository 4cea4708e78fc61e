import { type BankStore } from '@troupe/rsi';
import { ModelRegistry } from '@troupe/llm';
import { type FakeOpenAI } from '@troupe/testkit';

// What the rsi driver's integration tests share besides the role script: the three role models
// on one FakeOpenAI server, and a watch on a study's boundary records.

/** The `actor`, `verifier` and `curriculum` models, all served by `fake` at no cost. */
export function rsiModelRegistry(fake: FakeOpenAI): ModelRegistry {
  const model = () => ({
    baseURL: fake.baseURL,
    model: 'fake-model',
    inputUsdPer1M: 0,
    outputUsdPer1M: 0,
    maxTokens: 512,
  });
  return new ModelRegistry({ models: { actor: model(), verifier: model(), curriculum: model() } });
}

/** Every value each record key of a study ever had, as the bank bucket's watch delivers them. */
export interface StudyRecordWatch {
  /** Record key → the values written to it, in order. */
  written: Map<string, string[]>;
  /** The full key of record `name` (`phase1.ready`, `phase3.result`, …). */
  key(name: string): string;
  /** The first value of record `name`, parsed. */
  first<T>(name: string): T;
  stop(): void;
}

/** Watches the `<bankId>.study.>` records of a study from the start of its bucket's history. */
export async function watchStudyRecords(
  banks: BankStore,
  bankId: string,
): Promise<StudyRecordWatch> {
  const written = new Map<string, string[]>();
  const watch = await banks.kv.watch({ key: `${bankId}.study.>` });
  void (async () => {
    for await (const e of watch) {
      if (e.operation !== 'PUT') continue;
      written.set(e.key, [...(written.get(e.key) ?? []), e.string()]);
    }
  })();
  const key = (name: string) => `${bankId}.study.${name}`;
  return {
    written,
    key,
    first: <T>(name: string) => JSON.parse(written.get(key(name))![0]!) as T,
    stop: () => watch.stop(),
  };
}
