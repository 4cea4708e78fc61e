import { errorCode } from '@troupe/proto';
import { MemoryBank } from '../../src/bank/memory-bank';
import { type WaveRecord } from '../../src/phases/phase1';
import {
  checkPhase1Wave,
  clip,
  parsePhase1Reply,
  phase1CurriculumTask,
} from '../../src/shell/phase1-curriculum';

// Phase 1's Curriculum protocol: its JSON reply, the host's check of a wave, and its task text.

const finished = (finalText: string) => ({ stopReason: 'FINISHED' as const, finalText });
const project = (root: string, extra: Record<string, unknown> = {}) => ({
  root,
  body: `practise in ${root}`,
  fixtures: { [`${root}/in.txt`]: 'x\n' },
  ...extra,
});

describe('parsePhase1Reply', () => {
  test('a wave, READY and STALLED (fenced JSON too)', () => {
    const wave = { decision: 'wave', projects: [project('practice/a')] };
    expect(parsePhase1Reply('c', finished(JSON.stringify(wave)))).toEqual({
      kind: 'wave',
      projects: [project('practice/a')],
    });
    expect(parsePhase1Reply('c', finished('```json\n{"decision":"READY"}\n```'))).toEqual({
      kind: 'READY',
    });
    expect(
      parsePhase1Reply('c', finished('{"decision":"STALLED","reason":" nothing left "}')),
    ).toEqual({ kind: 'STALLED', reason: 'nothing left' });
  });

  test('what the model got wrong is malformed, naming the field', () => {
    expect(parsePhase1Reply('c', finished('a wave, please'))).toMatchObject({
      kind: 'malformed',
      problem: expect.stringContaining('not JSON'),
    });
    expect(
      parsePhase1Reply('c', finished('{"decision":"wave","projects":[{"root":"p","body":""}]}')),
    ).toEqual({ kind: 'malformed', problem: 'projects.0.body: must not be empty' });
    expect(parsePhase1Reply('c', finished('{"decision":"project"}'))).toMatchObject({
      kind: 'malformed',
      problem: expect.stringContaining('must be one of "wave", "READY", "STALLED"'),
    });
    expect(parsePhase1Reply('c', { stopReason: 'MAX_STEPS', finalText: '' })).toEqual({
      kind: 'malformed',
      problem: 'the turn ended with MAX_STEPS, not with finish_task',
    });
  });

  test('an infrastructure stop throws, never a reply', () => {
    let err: unknown;
    try {
      parsePhase1Reply('c', { stopReason: 'MODEL_ERROR', finalText: '', error: 'down' });
    } catch (e) {
      err = e;
    }
    expect(errorCode(err)).toBe('UNAVAILABLE');
  });
});

describe('checkPhase1Wave', () => {
  test('accepts distinct replayable projects up to the cap', () => {
    expect(checkPhase1Wave([project('practice/a'), project('practice/b')], 2)).toBeUndefined();
  });

  test('refuses an empty wave, too many projects, a shared root and a bad publication', () => {
    expect(checkPhase1Wave([], 4)).toContain('the wave has no project');
    expect(checkPhase1Wave([project('a'), project('b'), project('c')], 2)).toBe(
      'the wave has 3 projects, more than 2',
    );
    expect(checkPhase1Wave([project('practice/a'), project('practice/a')], 4)).toBe(
      'projects[1]: the root practice/a is used twice in the wave',
    );
    expect(
      checkPhase1Wave([project('practice/a'), project('practice/b', { fixtures: {} })], 4),
    ).toBe(
      'projects[1]: practice/b was absent, empty, or not replayable: the fixture tree is missing or empty',
    );
  });
});

test('the task text carries the brief, the inventory and the earlier waves, never contents', () => {
  const bank = MemoryBank.create({ 'lessons/a.md': 'SECRET LESSON TEXT\n' });
  const wave: WaveRecord = {
    wave: 1,
    input: { version: 1, commitHash: 'c1', treeHash: 't1' },
    output: { version: 2, commitHash: 'c2', treeHash: 't2' },
    branches: [
      {
        index: 1,
        project: 'practice/a',
        status: 'practised',
        verdict: 'FAIL',
        changed: ['lessons/a.md'],
        committed: true,
        report: 'a.txt is empty',
      },
    ],
  };
  const task = phase1CurriculumTask({
    brief: 'shell tasks',
    wave: 2,
    maxProjects: 3,
    bank,
    history: [wave],
    correction: 'the wave has no project',
  });
  expect(task.startsWith('Your last reply was refused: the wave has no project')).toBe(true);
  expect(task).toContain('shell tasks');
  expect(task).toContain('This is wave 2; a wave holds at most 3 projects.');
  expect(task).toContain('/bank/lessons/a.md (19 bytes)');
  expect(task).toContain('1. practice/a: FAIL; committed (lessons/a.md)');
  expect(task).toContain('Verifier report: a.txt is empty');
  expect(task).not.toContain('SECRET LESSON TEXT');
  expect(task).toContain('(working directory /workspace)');
  // A desktop study's roots are relative to the home directory.
  const desktop = phase1CurriculumTask({
    brief: 'b',
    wave: 1,
    maxProjects: 1,
    bank,
    history: [],
    workDir: '~',
  });
  expect(desktop).toContain('Domain of the development tasks (working directory ~):');
  expect(desktop).toContain('No wave has run yet.');
});

test('clip keeps short text and cuts long text with an ellipsis', () => {
  expect(clip('abc', 5)).toBe('abc');
  expect(clip('abcdefgh', 5)).toBe('abcd…');
});
