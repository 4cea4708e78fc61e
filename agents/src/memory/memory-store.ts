import { createKv, kvKeys } from '@troupe/actors';
import type { KV } from '@nats-io/kv';
import { type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, KvBucket, kvBucketName, parseWith, TroupeError } from '@troupe/proto';
import { z } from 'zod';

/** A memory scope (`job-<id>`, a template's name, or any shared name): `[a-z0-9][a-z0-9_-]{0,63}`. */
export const MemoryScopeSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must match [a-z0-9][a-z0-9_-]{0,63}');

/** An entry's key within its scope. */
export const MemoryKeySchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must match [a-z0-9][a-z0-9_-]{0,63}');

/** Limits of the memory store. */
export const MemoryLimits = {
  TITLE_CHARS: 200,
  TEXT_CHARS: 16_000,
  TAGS: 16,
  /** Entries one search reads at most (the newest keys win when a scope holds more). */
  SEARCH_ENTRIES: 5_000,
  /** Versions kept per entry. */
  HISTORY: 16,
} as const;

/** Who wrote an entry version, and when. */
export const MemoryProvenanceSchema = z.strictObject({
  session: z.string(),
  run: z.string(),
  step: z.int().nonnegative(),
  atMs: z.number(),
});
/** Who wrote an entry version. */
export type MemoryProvenance = z.output<typeof MemoryProvenanceSchema>;

/** One memory entry as stored. */
export const MemoryEntrySchema = z.strictObject({
  scope: MemoryScopeSchema,
  key: MemoryKeySchema,
  title: z.string().min(1).max(MemoryLimits.TITLE_CHARS),
  text: z.string().min(1).max(MemoryLimits.TEXT_CHARS),
  tags: z.array(z.string().min(1).max(64)).max(MemoryLimits.TAGS).default([]),
  provenance: MemoryProvenanceSchema,
});
/** One memory entry. */
export type MemoryEntry = z.output<typeof MemoryEntrySchema>;

/** An entry with its version (the KV revision of the write). */
export type VersionedMemoryEntry = MemoryEntry & { version: number };

/** A search hit. */
export interface MemoryHit {
  entry: VersionedMemoryEntry;
  score: number;
}

/** Lower-case word terms of a text. */
export function memoryTerms(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t.length > 1);
}

/**
 * Scores entries against a query: for each query term, its occurrences in the title (×3), tags
 * (×2) and text, damped (`1 + log(count)`) and weighted by rarity across the entries (idf).
 */
export function rankMemory(query: string, entries: readonly VersionedMemoryEntry[]): MemoryHit[] {
  const terms = [...new Set(memoryTerms(query))];
  if (terms.length === 0) return [];
  const docs = entries.map((e) => ({
    entry: e,
    title: memoryTerms(e.title),
    tags: e.tags.flatMap(memoryTerms),
    text: memoryTerms(e.text),
  }));
  const df = new Map<string, number>();
  for (const t of terms) {
    df.set(
      t,
      docs.filter((d) => d.title.includes(t) || d.tags.includes(t) || d.text.includes(t)).length,
    );
  }
  const hits: MemoryHit[] = [];
  for (const d of docs) {
    let score = 0;
    for (const t of terms) {
      const n = 3 * count(d.title, t) + 2 * count(d.tags, t) + count(d.text, t);
      if (n === 0) continue;
      score += (1 + Math.log(n)) * Math.log(1 + docs.length / (df.get(t) ?? 1));
    }
    if (score > 0) hits.push({ entry: d.entry, score });
  }
  return hits.sort((a, b) => b.score - a.score || b.entry.version - a.entry.version);
}

function count(words: readonly string[], term: string): number {
  let n = 0;
  for (const w of words) if (w === term) n++;
  return n;
}

/** Options of {@link MemoryStore.open}. */
export interface MemoryStoreOptions {
  cluster: string;
  /** @default 1 */
  replicas?: number;
}

/**
 * Agents' long-term memory: JetStream KV `troupe_<cluster>_memory`, one key per entry
 * (`<scope>.<key>`), each write a new version (the KV keeps {@link MemoryLimits.HISTORY}), each
 * version with its provenance. Scopes separate jobs, templates, or any shared name.
 */
export class MemoryStore {
  private constructor(private readonly kv: KV) {}

  static async open(nc: NatsConnection, options: MemoryStoreOptions): Promise<MemoryStore> {
    const name = kvBucketName(options.cluster, KvBucket.MEMORY);
    try {
      const kv = await createKv(nc, name, {
        replicas: options.replicas ?? 1,
        history: MemoryLimits.HISTORY,
      });
      return new MemoryStore(kv);
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `cannot open memory store ${name}`, {
        cause: err,
      });
    }
  }

  /** Writes a new version of an entry; returns it with its version. */
  async write(entry: MemoryEntry): Promise<VersionedMemoryEntry> {
    const valid = parseWith(MemoryEntrySchema, entry, { prefix: 'entry' });
    const version = await this.kv.put(`${valid.scope}.${valid.key}`, JSON.stringify(valid));
    return { ...valid, version };
  }

  /** The latest version of an entry, or the given one; undefined when there is none. */
  async read(
    scope: string,
    key: string,
    version?: number,
  ): Promise<VersionedMemoryEntry | undefined> {
    const s = parseWith(MemoryScopeSchema, scope, { prefix: 'scope' });
    const k = parseWith(MemoryKeySchema, key, { prefix: 'key' });
    const e = await this.kv.get(
      `${s}.${k}`,
      version !== undefined ? { revision: version } : undefined,
    );
    if (!e || e.operation !== 'PUT' || e.value.length === 0) return undefined;
    return {
      ...parseWith(MemoryEntrySchema, e.json(), { prefix: `memory ${s}.${k}` }),
      version: e.revision,
    };
  }

  /** Every version of an entry still kept, oldest first. */
  async versions(scope: string, key: string): Promise<VersionedMemoryEntry[]> {
    const s = parseWith(MemoryScopeSchema, scope, { prefix: 'scope' });
    const k = parseWith(MemoryKeySchema, key, { prefix: 'key' });
    const out: VersionedMemoryEntry[] = [];
    for await (const e of await this.kv.history({ key: `${s}.${k}` })) {
      if (e.operation !== 'PUT' || e.value.length === 0) continue;
      out.push({
        ...parseWith(MemoryEntrySchema, e.json(), { prefix: `memory ${s}.${k}` }),
        version: e.revision,
      });
    }
    return out;
  }

  /** The latest version of every entry of a scope, in key order. */
  async list(scope: string): Promise<VersionedMemoryEntry[]> {
    const s = parseWith(MemoryScopeSchema, scope, { prefix: 'scope' });
    const keys = (await kvKeys(this.kv, `${s}.>`)).sort();
    const out: VersionedMemoryEntry[] = [];
    for (const k of keys.slice(-MemoryLimits.SEARCH_ENTRIES)) {
      const e = await this.read(s, k.slice(s.length + 1));
      if (e) out.push(e);
    }
    return out;
  }

  /** The best `limit` entries of a scope for `query` (see {@link rankMemory}). */
  async search(scope: string, query: string, limit = 5): Promise<MemoryHit[]> {
    return rankMemory(query, await this.list(scope)).slice(0, limit);
  }

  /** A scope as JSONL: one entry (latest version, with provenance) per line. */
  async exportJsonl(scope: string): Promise<string> {
    return (await this.list(scope)).map((e) => JSON.stringify(e)).join('\n') + '\n';
  }

  /**
   * Imports JSONL lines (as {@link exportJsonl} writes them) into `scope`; each line is validated
   * (`line N.<field>`). Returns the entries written.
   */
  async importJsonl(scope: string, text: string): Promise<number> {
    const s = parseWith(MemoryScopeSchema, scope, { prefix: 'scope' });
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    const entries = lines.map((line, i) => {
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        throw new TroupeError(ErrorCode.INVALID_ARGUMENT, `\`line ${i + 1}\`: is not JSON`);
      }
      const { version: _v, ...rest } = (raw ?? {}) as Record<string, unknown>;
      return parseWith(MemoryEntrySchema, { ...rest, scope: s }, { prefix: `line ${i + 1}` });
    });
    for (const e of entries) await this.write(e);
    return entries.length;
  }
}
