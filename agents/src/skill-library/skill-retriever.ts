import { type SkillRecord } from './skill-record';

/** A retrieval query: the scenario and the text of the task at hand. */
export interface SkillQuery {
  scenario: string;
  text: string;
}

/**
 * Ranks skills for a query — the library's pluggable (semantic) retrieval. Returns at most
 * `limit` of `skills`, best first; it may leave out skills it finds irrelevant.
 */
export interface SkillRetriever {
  rank(query: SkillQuery, skills: SkillRecord[], limit: number): Promise<SkillRecord[]>;
}
