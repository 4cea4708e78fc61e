import { ErrorCode, toTroupeError } from '@troupe/proto';
import type { AgentTemplate } from '../agent/agent-template';
import type { SkillSource } from './skill-store';

/** The skills section of a system prompt, or why the run cannot have its skills. */
export type SkillCatalogue =
  { ok: true; text: string | undefined } | { ok: false; code: ErrorCode; why: string };

/**
 * Looks up the template's skills and lists them for the system prompt (name and description;
 * the agent loads the rest with `load_skill`). A skill the store lacks, or a host without a store,
 * refuses the run, naming the field.
 */
export async function skillCatalogue(
  template: AgentTemplate | undefined,
  source: SkillSource | undefined,
): Promise<SkillCatalogue> {
  const names = template?.skills ?? [];
  if (names.length === 0) return { ok: true, text: undefined };
  if (!source) {
    return {
      ok: false,
      code: ErrorCode.INVALID_ARGUMENT,
      why: '`run.template.skills`: this agent host has no skill store',
    };
  }
  const lines: string[] = [];
  for (const [i, name] of names.entries()) {
    let skill;
    try {
      skill = await source.get(name);
    } catch (err) {
      const e = toTroupeError(err);
      return { ok: false, code: e.code, why: `\`run.template.skills[${i}]\`: ${e.message}` };
    }
    if (!skill) {
      return {
        ok: false,
        code: ErrorCode.NOT_FOUND,
        why: `\`run.template.skills[${i}]\`: no skill '${name}' in the cluster's skill store`,
      };
    }
    lines.push(`- ${skill.name}: ${skill.description.replace(/\s+/g, ' ')}`);
  }
  return {
    ok: true,
    text: `You have these skills. Load one with load_skill when the task calls for it:\n${lines.join('\n')}`,
  };
}
