import { pack } from 'tar-stream';
import { errorCode } from '@troupe/proto';
import { MemoryBank } from '../../src/bank/memory-bank';
import { routeVerdict } from '../../src/loop/verdict';
import { actorEnding, splitFirstLine, verifierReport } from '../../src/shell/finish-protocol';
import { proposalChangesFromTar } from '../../src/shell/proposal';
import {
  acceptedProject,
  checkShellPublication,
  parseCurriculumReply,
  type ShellPublication,
} from '../../src/shell/publication';
import { curriculumTask, verifierTask } from '../../src/shell/role-prompts';
import { parseShellTask } from '../../src/shell/shell-task';
import { rsiRoleId } from '../../src/shell/shell-roles';

// The shell roles' parsers: the Actor's and Verifier's finish protocols, the Curriculum's JSON
// publication and the host's replayability check, the read-back of a lesson proposal, and the
// task schema's errors.

const finished = (finalText: string) => ({ stopReason: 'FINISHED' as const, finalText });

describe('Actor finish protocol', () => {
  test.each([
    ['DONE\nwrote count.txt', 'done'],
    ['  DONE  \r\nwrote it', 'done'],
    ['EVOLVE\ncould not parse the CSV', 'evolve'],
    ['EVOLVE', 'evolve'],
  ])('%j → %s', (text, ending) => {
    expect(actorEnding('s1', finished(text))).toBe(ending);
  });

  test.each(['done\nlowercase', 'DONE.', 'I am DONE', '', 'HANDOFF'])(
    'first line %j is no claim: a reason string that routes UNVERIFIED',
    (text) => {
      const ending = actorEnding('s1', finished(text));
      expect(ending).not.toBe('done');
      expect(ending).not.toBe('evolve');
      expect(ending).toContain('without DONE or EVOLVE');
      expect(routeVerdict(ending, { route: 'HANDOFF', report: 'ok' })).toBe('UNVERIFIED');
    },
  );

  test.each(['MAX_STEPS', 'NO_TOOL_CALLS', 'WALL_TIME', 'MAX_TOKENS', 'BUDGET_EXHAUSTED'] as const)(
    'a run that stopped with %s ends with that reason',
    (stopReason) => {
      expect(actorEnding('s1', { stopReason, finalText: 'DONE' })).toBe(
        `actor stopped: ${stopReason}`,
      );
    },
  );

  test.each([
    ['MODEL_ERROR', 'UNAVAILABLE'],
    ['INTERNAL_ERROR', 'INTERNAL'],
    ['REJECTED', 'INVALID_ARGUMENT'],
    ['CANCELLED', 'CANCELLED'],
  ] as const)('an infrastructure stop (%s) throws %s, never a verdict', (stopReason, code) => {
    let thrown: unknown;
    try {
      actorEnding('s1', { stopReason, finalText: 'DONE', error: 'provider down' });
    } catch (err) {
      thrown = err;
    }
    expect(errorCode(thrown)).toBe(code);
    expect(String(thrown)).toContain('provider down');
  });
});

describe('Verifier finish protocol', () => {
  test('HANDOFF and EVOLVE with the rest as the report', () => {
    expect(verifierReport('v', finished('HANDOFF\ncount.txt holds 3\nchecked with cat'))).toEqual({
      route: 'HANDOFF',
      report: 'count.txt holds 3\nchecked with cat',
    });
    expect(verifierReport('v', finished('EVOLVE\r\ncount.txt is missing'))).toEqual({
      route: 'EVOLVE',
      report: 'count.txt is missing',
    });
  });

  test.each(['Handoff\nok', 'HANDOFF: ok', 'PASS\nok', 'The task is done.'])(
    '%j commits no route',
    (text) => {
      const r = verifierReport('v', finished(text));
      expect(r.route).toBeUndefined();
      expect(r.report).toContain('committed no route');
      expect(routeVerdict('done', r)).toBe('UNVERIFIED');
    },
  );

  test('HANDOFF without a report routes UNVERIFIED (an empty report is no verdict)', () => {
    const r = verifierReport('v', finished('HANDOFF'));
    expect(r).toEqual({ route: 'HANDOFF', report: '' });
    expect(routeVerdict('done', r)).toBe('UNVERIFIED');
  });

  test('a step limit commits no route; a model error throws', () => {
    expect(verifierReport('v', { stopReason: 'MAX_STEPS', finalText: '' }).route).toBeUndefined();
    expect(() => verifierReport('v', { stopReason: 'MODEL_ERROR', finalText: '' })).toThrow(
      /Verifier run of session v stopped with MODEL_ERROR/,
    );
  });

  test('splitFirstLine', () => {
    expect(splitFirstLine('A\n\nB\nC\n')).toEqual({ first: 'A', rest: 'B\nC' });
    expect(splitFirstLine('A')).toEqual({ first: 'A', rest: '' });
  });
});

describe('Curriculum publication', () => {
  const project = {
    decision: 'project',
    root: 'practice/p1',
    body: 'Count the lines of practice/p1/in.txt into practice/p1/count.txt',
    fixtures: { 'practice/p1/in.txt': 'a\nb\n' },
  };

  test('a project, READY and STALLED', () => {
    const reply = parseCurriculumReply('c', finished(JSON.stringify(project)));
    expect(reply).toEqual({
      kind: 'project',
      publication: { root: project.root, body: project.body, fixtures: project.fixtures },
    });
    if (reply.kind !== 'project') throw new Error('unreachable');
    expect(checkShellPublication(reply.publication)).toBeUndefined();
    expect(acceptedProject(reply.publication)).toEqual({
      root: project.root,
      body: project.body,
      fixtures: project.fixtures,
    });
    expect(parseCurriculumReply('c', finished('{"decision":"READY"}'))).toEqual({ kind: 'READY' });
    expect(parseCurriculumReply('c', finished('```json\n{"decision":"READY"}\n```'))).toEqual({
      kind: 'READY',
    });
    expect(
      parseCurriculumReply('c', finished('{"decision":"STALLED","reason":"no progress"}')),
    ).toEqual({ kind: 'STALLED', reason: 'no progress' });
  });

  test.each([
    ['not JSON', 'READY', 'the finish_task summary is not JSON'],
    ['an unknown decision', '{"decision":"MAYBE"}', 'decision: must be one of'],
    ['an empty body', '{"decision":"project","root":"p","body":" "}', 'body: must not be empty'],
    [
      'a fixture that is not text',
      '{"decision":"project","root":"p","body":"b","fixtures":{"p/a":1}}',
      'fixtures.p/a: must be text',
    ],
  ])('%s becomes a refused publication whose correction names the problem', (_, text, problem) => {
    const reply = parseCurriculumReply('c', finished(text));
    expect(reply.kind).toBe('project');
    if (reply.kind !== 'project') throw new Error('unreachable');
    const correction = checkShellPublication(reply.publication);
    expect(correction).toContain('your reply is not a valid publication');
    expect(correction).toContain(problem);
    // The correction tells the Curriculum the format to use.
    expect(correction).toContain('{"decision":"READY"}');
  });

  test('a turn that never called finish_task is refused too; a model error throws', () => {
    const reply = parseCurriculumReply('c', { stopReason: 'NO_TOOL_CALLS', finalText: 'hmm' });
    if (reply.kind !== 'project') throw new Error('expected a refused publication');
    expect(checkShellPublication(reply.publication)).toContain('ended with NO_TOOL_CALLS');
    expect(() => parseCurriculumReply('c', { stopReason: 'MODEL_ERROR', finalText: '' })).toThrow(
      /MODEL_ERROR/,
    );
  });

  const body = 'practise';
  test.each<[string, ShellPublication, string]>([
    [
      'no root',
      { body, fixtures: { 'a.txt': 'x' } },
      'PROJECT_ROOT was absent, empty, or not replayable: the publication names no project root',
    ],
    [
      'an absolute root',
      { root: '/abs', body, fixtures: { '/abs/a': 'x' } },
      '/abs was absent, empty, or not replayable: the root must be relative',
    ],
    [
      'a root with ..',
      { root: 'p/../q', body, fixtures: { 'q/a': 'x' } },
      'p/../q was absent, empty, or not replayable: the root must not contain ".."',
    ],
    [
      'no fixtures',
      { root: 'p', body },
      'p was absent, empty, or not replayable: the fixture tree is missing or empty',
    ],
    [
      'an empty fixture tree',
      { root: 'p', body, fixtures: {} },
      'p was absent, empty, or not replayable: the fixture tree is missing or empty',
    ],
    [
      'an absolute fixture',
      { root: 'p', body, fixtures: { '/etc/passwd': 'x' } },
      'p was absent, empty, or not replayable: fixture "/etc/passwd" must be relative',
    ],
    [
      'a fixture with ..',
      { root: 'p', body, fixtures: { 'p/../../x': 'x' } },
      'fixture "p/../../x" must not contain ".." segments',
    ],
    [
      'a fixture outside the root',
      { root: 'p', body, fixtures: { 'q/a.txt': 'x' } },
      'p was absent, empty, or not replayable: fixture "q/a.txt" lies outside the root',
    ],
    [
      'the root itself as a fixture',
      { root: 'p', body, fixtures: { p: 'x' } },
      'fixture "p" lies outside the root',
    ],
  ])('%s is refused with the seed message', (_, publication, message) => {
    expect(checkShellPublication(publication)).toContain(message);
    expect(acceptedProject(publication)).toBeUndefined();
  });

  test('an oversized fixture tree is refused', () => {
    const publication = { root: 'p', body, fixtures: { 'p/big': 'x'.repeat(300 * 1024) } };
    expect(checkShellPublication(publication)).toMatch(/p was absent.*hold 307200 bytes/);
  });
});

async function tarOf(
  entries: { name: string; content?: string; type?: 'symlink' | 'directory' }[],
) {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const c of p) chunks.push(c as Buffer);
  })();
  for (const e of entries) {
    if (e.type === 'directory') p.entry({ name: e.name, type: 'directory' });
    else if (e.type === 'symlink')
      p.entry({ name: e.name, type: 'symlink', linkname: '/etc/passwd' });
    else p.entry({ name: e.name }, Buffer.from(e.content ?? ''));
  }
  p.finalize();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}

describe('lesson proposal read-back', () => {
  const bank = MemoryBank.create({ 'lessons/csv.md': 'split on commas\n', 'old.md': 'stale\n' });

  test('files become add/modify (identical ones nothing), .delete lines become deletes', async () => {
    const tar = await tarOf([
      { name: './', type: 'directory' },
      { name: './lessons/', type: 'directory' },
      { name: './lessons/csv.md', content: 'split on commas, mind quotes\n' },
      { name: './lessons/new.md', content: 'count lines with wc -l\n' },
      { name: './same.md', content: 'x' },
      { name: './.delete', content: 'old.md\n\n/bank/gone.md\n' },
    ]);
    const withSame = MemoryBank.create({ ...Object.fromEntries(bank.toMap()), 'same.md': 'x' });
    const r = await proposalChangesFromTar(tar, withSame);
    expect(r).toEqual({
      changes: [
        { op: 'modify', path: 'lessons/csv.md', content: expect.any(Uint8Array) },
        { op: 'add', path: 'lessons/new.md', content: expect.any(Uint8Array) },
        { op: 'delete', path: 'old.md' },
        { op: 'delete', path: 'gone.md' },
      ],
    });
    if (!('changes' in r)) throw new Error('unreachable');
    expect(Buffer.from(r.changes[1]?.op === 'add' ? r.changes[1].content : '').toString()).toBe(
      'count lines with wc -l\n',
    );
  });

  test('an empty proposal is an empty change set', async () => {
    expect(
      await proposalChangesFromTar(await tarOf([{ name: './', type: 'directory' }]), bank),
    ).toEqual({
      changes: [],
    });
  });

  test('a symlink makes the proposal unreadable', async () => {
    const r = await proposalChangesFromTar(
      await tarOf([{ name: './x.md', type: 'symlink' }]),
      bank,
    );
    expect(r).toEqual({ unreadable: '/proposal/x.md is a symlink; only regular files are read' });
  });

  test('bytes that are no tar make it unreadable', async () => {
    const r = await proposalChangesFromTar(new Uint8Array(Buffer.from('x'.repeat(1024))), bank);
    expect(r).toHaveProperty('unreadable');
  });
});

describe('shell task', () => {
  const task = {
    id: 'count-lines',
    instruction: 'Count the lines.',
    evaluator: 'test -f count.txt',
  };

  test('defaults', () => {
    expect(parseShellTask(task)).toMatchObject({
      id: 'count-lines',
      setup: { files: {} },
      image: 'troupe-busybox:latest',
      limits: { actorMaxSteps: 30, verifierMaxSteps: 15, curriculumMaxSteps: 5 },
    });
  });

  test('errors name the field and the rule', () => {
    const bad = (input: unknown): string => {
      try {
        parseShellTask(input);
      } catch (err) {
        expect(errorCode(err)).toBe('INVALID_ARGUMENT');
        return String(err);
      }
      throw new Error('expected a refusal');
    };
    expect(bad({ ...task, id: 'a b' })).toContain('task.id');
    expect(bad({ ...task, evaluator: undefined })).toContain('task.evaluator');
    expect(bad({ ...task, setup: { files: { '../x': 'y' } } })).toMatch(
      /task\.setup\.files.*must not contain "\.\." segments/,
    );
    expect(bad({ ...task, limits: { actorMaxSteps: 0 } })).toContain('task.limits.actorMaxSteps');
    expect(bad({ ...task, extra: 1 })).toContain('extra');
  });

  test('no role prompt carries the evaluator', () => {
    const t = parseShellTask({ ...task, evaluator: 'grep -q SECRET-CHECK count.txt' });
    const bank0 = MemoryBank.create({});
    const texts = [
      verifierTask(t.instruction),
      curriculumTask(t.instruction, {
        targetId: t.id,
        mode: 'practice',
        verdict: 'FAIL',
        report: 'missing',
        bank: { bank: bank0 },
        outcomes: [],
      }),
    ];
    for (const text of texts) expect(text).not.toContain('SECRET-CHECK');
  });
});

describe('rsiRoleId', () => {
  test('the same job, task, work and execution give the same id; another execution another', () => {
    const a = rsiRoleId('actor', 'j1', 't1', 'target-1', 'exec-a');
    expect(a).toMatch(/^rsi-actor-[0-9a-f]{32}$/);
    expect(rsiRoleId('actor', 'j1', 't1', 'target-1', 'exec-a')).toBe(a);
    expect(rsiRoleId('actor', 'j1', 't1', 'target-1', 'exec-b')).not.toBe(a);
    expect(rsiRoleId('actor', 'j1', 't1', 'target-2', 'exec-a')).not.toBe(a);
    // Without an execution the id depends on job, task and work only.
    expect(rsiRoleId('actor', 'j1', 't1', 'target-1')).toBe(
      rsiRoleId('actor', 'j1', 't1', 'target-1', ''),
    );
    expect(rsiRoleId('actor', 'j1', 't1', 'target-1')).not.toBe(a);
  });
});
