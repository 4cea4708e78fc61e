import { createKv, kvKeys } from '@troupe/actors';
import type { KV } from '@nats-io/kv';
import { type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, KvBucket, kvBucketName, parseWith, TroupeError } from '@troupe/proto';
import { type Skill, SkillNameSchema, SkillSchema } from './skill';

/** What the agent needs of a skill store: a skill by name. */
export interface SkillSource {
  /** The skill, or undefined when there is none by that name. */
  get(name: string): Promise<Skill | undefined>;
}

/** Options of {@link SkillStore.open}. */
export interface SkillStoreOptions {
  cluster: string;
  /** Replicas of the bucket when it is created. @default 1 */
  replicas?: number;
}

/**
 * The cluster's skills, one KV entry per skill (bucket `KV_TROUPE_<C>_SKILLS`): pushed by
 * `troupe skills push` or a driver, read by every agent host. Putting a skill again replaces it;
 * the KV keeps the previous version (history 5).
 */
export class SkillStore implements SkillSource {
  private constructor(private readonly kv: KV) {}

  /** Opens (creating if needed) the cluster's skills bucket. */
  static async open(nc: NatsConnection, options: SkillStoreOptions): Promise<SkillStore> {
    const name = kvBucketName(options.cluster, KvBucket.SKILLS);
    try {
      const kv = await createKv(nc, name, { replicas: options.replicas ?? 1, history: 5 });
      return new SkillStore(kv);
    } catch (err) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `cannot open skill store ${name}`, {
        cause: err,
      });
    }
  }

  /** Stores `skill` (validated again); returns its revision. */
  async put(skill: Skill): Promise<number> {
    const valid = parseWith(SkillSchema, skill, { prefix: 'skill' });
    return this.kv.put(valid.name, JSON.stringify(valid));
  }

  async get(name: string): Promise<Skill | undefined> {
    const key = parseWith(SkillNameSchema, name, { prefix: 'name' });
    const e = await this.kv.get(key);
    if (!e || e.operation !== 'PUT' || e.value.length === 0) return undefined;
    return parseWith(SkillSchema, e.json(), { prefix: `skill ${key}` });
  }

  /** Every skill's name and description, in name order. */
  async list(): Promise<Pick<Skill, 'name' | 'description'>[]> {
    const names = (await kvKeys(this.kv)).sort();
    const out: Pick<Skill, 'name' | 'description'>[] = [];
    for (const n of names) {
      const s = await this.get(n);
      if (s) out.push({ name: s.name, description: s.description });
    }
    return out;
  }

  /** Removes a skill; true when there was one. */
  async remove(name: string): Promise<boolean> {
    const key = parseWith(SkillNameSchema, name, { prefix: 'name' });
    const had = (await this.get(key)) !== undefined;
    if (had) await this.kv.delete(key);
    return had;
  }
}
