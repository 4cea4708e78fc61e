import { type BankStore } from '@troupe/rsi';
import { ModelRegistry } from '@troupe/llm';
import { type ChatRequest, type FakeOpenAI } from '@troupe/testkit';
import { readRequest } from './rsi-script';

// What the rsi driver's integration tests share besides the role script: the three role models
// on one FakeOpenAI server, a watch on a study's boundary records, the records a study of the
// shipped rsi-shell-mini suite writes, and which part of that study each model request served.

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

/** The record names a study of rsi-shell-mini writes (one wave, two dev and two held-out tasks). */
export const SHELL_MINI_RECORDS = [
  'phase1.wave-1',
  'phase1.ready',
  'phase2.greeting',
  'phase2.count-lines',
  'phase2.frozen',
  'phase3.farewell',
  'phase3.count-words',
  'phase3.result',
] as const;

/** A part of an rsi-shell-mini study, as its model requests show it. */
export type ShellMiniPart = 'phase1' | 'greeting' | 'count-lines' | 'held-out' | 'other';

/** Which part of the study a model request belongs to (from the files its conversation names). */
export function partOf(req: ChatRequest): ShellMiniPart {
  const { role } = readRequest(req);
  const body = JSON.stringify(req.body.messages);
  if (role === 'phase1-curriculum' || /practice\/p[12]\//.test(body)) return 'phase1';
  if (body.includes('greeting.txt')) return 'greeting';
  if (body.includes('count.txt')) return 'count-lines';
  if (body.includes('farewell.txt') || body.includes('wc.txt')) return 'held-out';
  return 'other';
}

/** The model requests `fake` has served so far, counted by {@link partOf}. */
export function countParts(fake: FakeOpenAI): Partial<Record<ShellMiniPart, number>> {
  const counts: Partial<Record<ShellMiniPart, number>> = {};
  for (const r of fake.chatRequests) {
    const part = partOf(r);
    counts[part] = (counts[part] ?? 0) + 1;
  }
  return counts;
}
