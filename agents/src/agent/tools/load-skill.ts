import { z } from 'zod';
import { AgentToolName } from '../agent-tool-name';
import { defineTool } from './agent-tool';
import { toolError } from './tool-outcome';

/**
 * `load_skill`: the instructions of one of the agent's skills and the list of its files, or one
 * of those files. Held by every agent whose template names skills; only those can be loaded.
 */
export const loadSkill = defineTool({
  name: AgentToolName.LOAD_SKILL,
  description:
    "Load one of your skills: its instructions and the list of its files, or (with `file`) one of the skill's files.",
  schema: z.strictObject({
    name: z.string().min(1).describe('the skill name, as listed in your instructions'),
    file: z.string().min(1).optional().describe("a path from the skill's file list"),
  }),
  effect: false,
  sandbox: false,
  async run({ session: s, skills }, a) {
    const mine = s.template.skills ?? [];
    if (!mine.includes(a.name)) {
      return toolError(
        `\`arguments.name\`: '${a.name}' is not one of your skills (${mine.join(', ') || 'you have none'})`,
      );
    }
    if (!skills) return toolError('UNAVAILABLE: this agent host has no skill store');
    const skill = await skills.get(a.name);
    if (!skill) return toolError(`NOT_FOUND: skill '${a.name}' is no longer in the skill store`);
    const paths = Object.keys(skill.files).sort();
    if (a.file !== undefined) {
      if (!Object.hasOwn(skill.files, a.file)) {
        return toolError(
          `\`arguments.file\`: skill ${a.name} has no file '${a.file}' (its files: ${paths.join(', ') || 'none'})`,
        );
      }
      return { ok: true, content: skill.files[a.file]! };
    }
    const list =
      paths.length > 0
        ? `\n\nFiles (load one with file):\n${paths.map((p) => `- ${p}`).join('\n')}`
        : '';
    return {
      ok: true,
      content: `# Skill ${skill.name}\n${skill.description}\n\n${skill.instructions}${list}`,
    };
  },
});
