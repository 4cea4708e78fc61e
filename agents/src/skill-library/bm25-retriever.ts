import { type SkillQuery, type SkillRetriever } from './skill-retriever';
import { type SkillRecord } from './skill-record';

/** Words that say nothing about what a function does. */
const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an and are as at be by def do for from get if in is it of on or return self set the ' +
    'then this to with none true false not pass else elif try except import'
  ).split(' '),
);

/**
 * Lower-case word terms of a text, identifiers split at `_` and camelCase boundaries
 * (`splitBill_now` → `split`, `bill`, `now`), stop words and one-letter words left out.
 */
export function skillTerms(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t.length > 1 && !STOP_WORDS.has(t));
}

/** Options of {@link Bm25Retriever}. */
export interface Bm25RetrieverOptions {
  /** Term-frequency saturation. @default 1.2 */
  k1?: number;
  /** Length normalisation. @default 0.75 */
  b?: number;
}

/**
 * The default {@link SkillRetriever}: lexical BM25 over each skill's name (weight 3),
 * description (weight 2) and the identifiers of its source (weight 1), with document
 * frequencies taken over the skills being ranked. Skills sharing no term with the query are
 * left out; ties go to the newer version, then the name.
 */
export class Bm25Retriever implements SkillRetriever {
  private readonly k1: number;
  private readonly b: number;

  constructor(options: Bm25RetrieverOptions = {}) {
    this.k1 = options.k1 ?? 1.2;
    this.b = options.b ?? 0.75;
  }

  rank(query: SkillQuery, skills: SkillRecord[], limit: number): Promise<SkillRecord[]> {
    return Promise.resolve(
      this.scores(query.text, skills)
        .slice(0, Math.max(0, limit))
        .map((s) => s.skill),
    );
  }

  /** Every skill with a positive score for `text`, best first, with its score. */
  scores(text: string, skills: readonly SkillRecord[]): { skill: SkillRecord; score: number }[] {
    const terms = [...new Set(skillTerms(text))];
    if (terms.length === 0 || skills.length === 0) return [];
    const docs = skills.map((skill) => {
      const tf = new Map<string, number>();
      const add = (words: string[], weight: number): void => {
        for (const w of words) tf.set(w, (tf.get(w) ?? 0) + weight);
      };
      add(skillTerms(skill.name), 3);
      add(skillTerms(skill.description), 2);
      add(skillTerms(skill.source), 1);
      let length = 0;
      for (const n of tf.values()) length += n;
      return { skill, tf, length };
    });
    const avgLength = docs.reduce((s, d) => s + d.length, 0) / docs.length || 1;
    const idf = new Map<string, number>();
    for (const t of terms) {
      const df = docs.filter((d) => d.tf.has(t)).length;
      idf.set(t, Math.log(1 + (docs.length - df + 0.5) / (df + 0.5)));
    }
    const out: { skill: SkillRecord; score: number }[] = [];
    for (const d of docs) {
      let score = 0;
      for (const t of terms) {
        const f = d.tf.get(t) ?? 0;
        if (f === 0) continue;
        const norm = this.k1 * (1 - this.b + (this.b * d.length) / avgLength);
        score += ((idf.get(t) ?? 0) * (f * (this.k1 + 1))) / (f + norm);
      }
      if (score > 0) out.push({ skill: d.skill, score });
    }
    return out.sort(
      (x, y) =>
        y.score - x.score ||
        y.skill.version - x.skill.version ||
        x.skill.name.localeCompare(y.skill.name),
    );
  }
}
