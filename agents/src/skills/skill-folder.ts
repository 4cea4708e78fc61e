import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { invalidArgument, parseWith } from '@troupe/proto';
import { parseSkillMarkdown, type Skill, SkillLimits, SkillSchema } from './skill';

/** The file that makes a folder a skill. */
export const SKILL_FILE = 'SKILL.md';

/** Every regular file under `dir` (relative POSIX paths), refusing symlinks that leave it. */
async function filesUnder(dir: string, field: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
      const relPath = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(relPath);
      else if (entry.isFile()) out.push(relPath);
      else if (entry.isSymbolicLink()) {
        throw invalidArgument(`${field}/${relPath}`, 'must not be a symbolic link');
      }
      if (out.length > SkillLimits.FILES + 1) {
        throw invalidArgument(
          field,
          `must hold at most ${SkillLimits.FILES} files besides ${SKILL_FILE}`,
        );
      }
    }
  };
  await walk('');
  return out.sort();
}

/**
 * Reads a skill folder: `SKILL.md` (front matter `name`, `description`; the body is the
 * instructions) and every other file as text. The folder's name must be the skill's name.
 */
export async function loadSkillFolder(dir: string): Promise<Skill> {
  const field = dir;
  const files = await filesUnder(dir, field);
  if (!files.includes(SKILL_FILE)) throw invalidArgument(field, `must contain ${SKILL_FILE}`);
  const md = parseSkillMarkdown(
    await readFile(path.join(dir, SKILL_FILE), 'utf8'),
    `${field}/${SKILL_FILE}`,
  );
  if (md.name !== path.basename(dir)) {
    throw invalidArgument(
      `${field}/${SKILL_FILE}.name`,
      `must be the folder's name '${path.basename(dir)}'`,
      md.name,
    );
  }
  const contents: Record<string, string> = {};
  let bytes = 0;
  for (const rel of files) {
    if (rel === SKILL_FILE) continue;
    const size = (await stat(path.join(dir, rel))).size;
    bytes += size;
    if (bytes > SkillLimits.FILES_BYTES) {
      throw invalidArgument(
        field,
        `must hold at most ${SkillLimits.FILES_BYTES} bytes of files in all`,
      );
    }
    contents[rel] = await readFile(path.join(dir, rel), 'utf8');
  }
  return parseWith(SkillSchema, { ...md, files: contents }, { prefix: field });
}

/**
 * Reads a skills directory: each subfolder holding a `SKILL.md` is a skill (other entries are
 * ignored), in name order.
 */
export async function loadSkillsDir(root: string): Promise<Skill[]> {
  const skills: Skill[] = [];
  for (const entry of (await readdir(root, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : 1,
  )) {
    if (!entry.isDirectory()) continue;
    const dir = path.join(root, entry.name);
    const has = await stat(path.join(dir, SKILL_FILE)).then(
      (s) => s.isFile(),
      () => false,
    );
    if (has) skills.push(await loadSkillFolder(dir));
  }
  return skills;
}
