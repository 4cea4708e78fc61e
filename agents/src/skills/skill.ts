import { invalidArgument, parseUntrustedText, parseWith } from '@troupe/proto';
import { z } from 'zod';

/** A skill name: `[a-z][a-z0-9_-]{0,63}`. */
export const SkillNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,63}$/, 'must match [a-z][a-z0-9_-]{0,63}');

/** Limits of one skill. */
export const SkillLimits = {
  /** Characters of the description (it goes into every system prompt that lists the skill). */
  DESCRIPTION_CHARS: 1_024,
  /** Bytes of `SKILL.md`. */
  SKILL_MD_BYTES: 64 * 1024,
  /** Bytes of all of a skill's files together (one KV value with the rest). */
  FILES_BYTES: 512 * 1024,
  /** Files besides `SKILL.md`. */
  FILES: 64,
} as const;

/** A relative POSIX path inside a skill folder, without `.` or `..` segments. */
const SkillFilePathSchema = z
  .string()
  .min(1)
  .max(256)
  .refine(
    (p) => !p.startsWith('/') && p.split('/').every((s) => s !== '' && s !== '.' && s !== '..'),
    'must be a relative path without . or .. segments',
  );

/**
 * A skill: what an agent may load on demand. `description` is listed in the system prompt of
 * every agent whose template names the skill; `instructions` (the body of `SKILL.md`) and
 * `files` are read with the `load_skill` tool.
 */
export const SkillSchema = z.strictObject({
  name: SkillNameSchema,
  description: z.string().min(1, 'must not be empty').max(SkillLimits.DESCRIPTION_CHARS),
  instructions: z.string().max(SkillLimits.SKILL_MD_BYTES),
  /** Relative path → text. @default {} */
  files: z
    .record(SkillFilePathSchema, z.string())
    .default({})
    .refine(
      (f) => Object.keys(f).length <= SkillLimits.FILES,
      `must have at most ${SkillLimits.FILES} files`,
    )
    .refine(
      (f) =>
        Object.values(f).reduce((n, t) => n + Buffer.byteLength(t, 'utf8'), 0) <=
        SkillLimits.FILES_BYTES,
      `must hold at most ${SkillLimits.FILES_BYTES} bytes in all`,
    ),
});
/** A validated skill. */
export type Skill = z.output<typeof SkillSchema>;

const FrontMatterSchema = z.looseObject({
  name: SkillNameSchema,
  description: z.string().min(1, 'must not be empty').max(SkillLimits.DESCRIPTION_CHARS),
});

/**
 * Parses a `SKILL.md`: YAML front matter between `---` lines with `name` and `description`, then
 * the instructions. `field` names the file in errors (`skills/x/SKILL.md.name: …`).
 */
export function parseSkillMarkdown(
  text: string,
  field: string,
): Pick<Skill, 'name' | 'description' | 'instructions'> {
  if (Buffer.byteLength(text, 'utf8') > SkillLimits.SKILL_MD_BYTES) {
    throw invalidArgument(field, `must be at most ${SkillLimits.SKILL_MD_BYTES} bytes`);
  }
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match) {
    throw invalidArgument(
      field,
      'must start with YAML front matter between --- lines (name, description)',
    );
  }
  const meta = parseWith(FrontMatterSchema, parseUntrustedText(match[1]!, { field }), {
    prefix: field,
  });
  return { name: meta.name, description: meta.description.trim(), instructions: match[2]!.trim() };
}
