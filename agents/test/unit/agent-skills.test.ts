import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorCode } from '@troupe/proto';
import { parseAgentTemplate } from '../../src/agent/agent-template';
import { holdsTool } from '../../src/agent/agent-template';
import { parseSkillMarkdown } from '../../src/skills/skill';
import { skillCatalogue } from '../../src/skills/skill-catalogue';
import { loadSkillFolder, loadSkillsDir } from '../../src/skills/skill-folder';

const MD =
  '---\nname: bisect\ndescription: Find the commit that broke a test with git bisect.\n---\n# Steps\n1. git bisect start\n';

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'skills-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function folder(name: string, files: Record<string, string>): string {
  const dir = path.join(root, name);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

test('SKILL.md: front matter gives name and description, the body the instructions', () => {
  expect(parseSkillMarkdown(MD, 'SKILL.md')).toEqual({
    name: 'bisect',
    description: 'Find the commit that broke a test with git bisect.',
    instructions: '# Steps\n1. git bisect start',
  });
  expect(() => parseSkillMarkdown('# no front matter', 'x/SKILL.md')).toThrow(
    /`x\/SKILL.md`: must start with YAML front matter/,
  );
  expect(() =>
    parseSkillMarkdown('---\nname: Bad Name\ndescription: d\n---\n', 'x/SKILL.md'),
  ).toThrow(/x\/SKILL.md.name`?: must match/);
  expect(() => parseSkillMarkdown('---\nname: ok\n---\nbody', 'x/SKILL.md')).toThrow(
    /x\/SKILL.md.description/,
  );
});

test('a skill folder is read with its files; a skills directory lists its skill folders in order', async () => {
  folder('bisect', { 'SKILL.md': MD, 'scripts/run.sh': 'git bisect run make test\n' });
  folder('zeta', { 'SKILL.md': MD.replace('name: bisect', 'name: zeta') });
  folder('not-a-skill', { 'README.md': 'hi' });
  writeFileSync(path.join(root, 'loose.txt'), 'ignored');
  const skills = await loadSkillsDir(root);
  expect(skills.map((s) => s.name)).toEqual(['bisect', 'zeta']);
  expect(skills[0]?.files).toEqual({ 'scripts/run.sh': 'git bisect run make test\n' });
});

test('a folder whose name is not the skill name, without SKILL.md, or with a symlink is refused, naming it', async () => {
  const wrong = folder('other', { 'SKILL.md': MD });
  const err = await loadSkillFolder(wrong).catch((e: unknown) => e);
  expect(errorCode(err)).toBe('INVALID_ARGUMENT');
  expect(String(err)).toContain(`\`${wrong}/SKILL.md.name\`: must be the folder's name 'other'`);
  const empty = folder('empty', { 'x.txt': '' });
  await expect(loadSkillFolder(empty)).rejects.toThrow(/must contain SKILL.md/);
  const linked = folder('bisect', { 'SKILL.md': MD });
  symlinkSync('/etc/passwd', path.join(linked, 'passwd'));
  await expect(loadSkillFolder(linked)).rejects.toThrow(/passwd`: must not be a symbolic link/);
});

test('templates name skills; load_skill is held only with skills; the catalogue names a missing one', async () => {
  const t = parseAgentTemplate({ name: 'a', instruction: 'x', model: 'm', skills: ['bisect'] });
  expect(holdsTool(t, 'load_skill')).toBe(true);
  expect(
    holdsTool(parseAgentTemplate({ name: 'a', instruction: 'x', model: 'm' }), 'load_skill'),
  ).toBe(false);
  expect(() =>
    parseAgentTemplate({ name: 'a', instruction: 'x', model: 'm', skills: ['b', 'b'] }),
  ).toThrow(/template.skills`?: must not repeat a skill/);
  const source = {
    get: async (n: string) =>
      n === 'bisect'
        ? { name: 'bisect', description: 'Find\nthe commit.', instructions: '', files: {} }
        : undefined,
  };
  expect(await skillCatalogue(t, source)).toEqual({
    ok: true,
    text: 'You have these skills. Load one with load_skill when the task calls for it:\n- bisect: Find the commit.',
  });
  const two = parseAgentTemplate({
    name: 'a',
    instruction: 'x',
    model: 'm',
    skills: ['bisect', 'gone'],
  });
  expect(await skillCatalogue(two, source)).toEqual({
    ok: false,
    code: 'NOT_FOUND',
    why: "`run.template.skills[1]`: no skill 'gone' in the cluster's skill store",
  });
  expect(await skillCatalogue(t, undefined)).toMatchObject({ ok: false, code: 'INVALID_ARGUMENT' });
});
