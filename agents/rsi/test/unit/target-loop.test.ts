import { TroupeError } from '@troupe/proto';
import {
  type ActorRun,
  type Admission,
  type BankHandle,
  type CurriculumReply,
  type CurriculumRequest,
  isTransitionReady,
  type LessonProposal,
  type RsiRoles,
  runTarget,
  type TargetLoopOptions,
  type Work,
} from '../../src/loop/target-loop';
import { routeVerdict, type VerifierReport } from '../../src/loop/verdict';

// RSIAgent's target state machine driven by scripted roles: each test scripts what the Actor,
// the Verifier and the Curriculum answer, and checks the routing, the order of effects (learning
// before the environment goes, practice in its own environment, a fresh environment per attempt)
// and the host's admission checks.

interface Bank extends BankHandle {
  lessons: string[];
}
interface Project {
  root?: string;
  fixtures?: Record<string, string>;
}
interface Env {
  id: string;
  kind: 'target' | 'practice';
}

const bank0: Bank = { hash: 'b0', lessons: [] };

/** Scripted roles: queues of answers, a log of every call in order. */
class Script implements RsiRoles<Env, Bank, Project> {
  readonly log: string[] = [];
  readonly curriculumRequests: CurriculumRequest<Bank, Project>[] = [];
  readonly released: string[] = [];
  readonly open = new Set<string>();
  private envs = 0;
  /** The proposal hook: by default a well-formed proposal with one lesson. */
  propose: (input: {
    work: Work<Project>;
    verdict: 'PASS' | 'FAIL';
    bank: Bank;
  }) => LessonProposal = ({ work, verdict, bank }) => ({
    targetId: work.targetId,
    baseHash: bank.hash,
    verdict,
    changes: `${work.kind}-${verdict}`,
  });
  refuseInstall: string | undefined;

  constructor(
    private readonly endings: string[],
    private readonly reports: VerifierReport[],
    private readonly replies: CurriculumReply<Project>[] = [],
  ) {}

  private newEnv(kind: Env['kind']): Env {
    const env = { id: `${kind}${++this.envs}`, kind };
    this.open.add(env.id);
    this.log.push(`open ${env.id}`);
    return env;
  }
  async openTarget(work: Work<Project> & { kind: 'target' }, bank: Bank): Promise<Env> {
    this.log.push(`target attempt ${work.attempt}${work.final ? ' final' : ''} bank ${bank.hash}`);
    return this.newEnv('target');
  }
  async openPractice(work: Work<Project> & { kind: 'practice' }): Promise<Env> {
    this.log.push(`practice ${work.index} ${work.project.root ?? '?'}`);
    return this.newEnv('practice');
  }
  async release(env: Env): Promise<void> {
    this.open.delete(env.id);
    this.released.push(env.id);
    this.log.push(`release ${env.id}`);
  }
  async act(env: Env): Promise<ActorRun> {
    const ending = this.endings.shift();
    if (ending === undefined) throw new Error('the script has no more Actor endings');
    if (ending === 'crash') throw new TroupeError('UNAVAILABLE', 'the model provider is down');
    this.log.push(`act ${env.id} → ${ending}`);
    return { ending, context: [`actor messages in ${env.id}`] };
  }
  async verify(env: Env, work: Work<Project>): Promise<VerifierReport> {
    // The Verifier's inputs are the environment and the work: never the Actor's run.
    expect(Object.keys(work)).not.toContain('context');
    const r = this.reports.shift();
    if (r === undefined) throw new Error('the script has no more Verifier reports');
    this.log.push(`verify ${env.id} → ${r.route ?? 'none'}`);
    return r;
  }
  async proposeLessons(input: {
    work: Work<Project>;
    run: ActorRun;
    report: VerifierReport;
    verdict: 'PASS' | 'FAIL';
    bank: Bank;
  }): Promise<LessonProposal> {
    this.log.push(`propose ${input.work.kind} ${input.verdict}`);
    // The environment the Actor worked in is still open while it proposes.
    expect(this.open.size).toBeGreaterThan(0);
    return this.propose(input);
  }
  async install(proposal: LessonProposal, bank: Bank): Promise<Admission<Bank>> {
    if (this.refuseInstall !== undefined) return { installed: false, reason: this.refuseInstall };
    const lessons = [...bank.lessons, String(proposal.changes)];
    this.log.push(`install ${String(proposal.changes)}`);
    return { installed: true, bank: { hash: `b${lessons.length}`, lessons } };
  }
  async curriculum(request: CurriculumRequest<Bank, Project>): Promise<CurriculumReply<Project>> {
    this.curriculumRequests.push(request);
    const reply = this.replies.shift();
    if (reply === undefined) throw new Error('the script has no more Curriculum replies');
    this.log.push(`curriculum ${request.mode} → ${reply.kind}`);
    return reply;
  }
  checkPublication(p: Project): string | undefined {
    if (!p.root) return 'the publication names no project root';
    if (!p.fixtures || Object.keys(p.fixtures).length === 0)
      return `${p.root} was absent, empty, or not replayable`;
    return undefined;
  }
}

const pass: VerifierReport = { route: 'HANDOFF', report: 'the file holds the expected text' };
const fail: VerifierReport = { route: 'EVOLVE', report: 'count.txt is missing' };
const project = (root: string): CurriculumReply<Project> => ({
  kind: 'project',
  publication: { root, fixtures: { [`${root}/data.txt`]: 'a\nb\n' } },
});

async function run(script: Script, options: Partial<TargetLoopOptions> = {}) {
  const result = await runTarget('t1', bank0, script, { stopPolicy: 'verifier_pass', ...options });
  // Every environment the loop opened is released, whatever happened.
  expect(script.open.size).toBe(0);
  return result;
}

describe('routeVerdict', () => {
  test.each([
    ['done', 'HANDOFF', 'ok', 'PASS'],
    ['evolve', 'EVOLVE', 'missing', 'FAIL'],
    ['done', 'EVOLVE', 'missing', 'UNVERIFIED'],
    ['evolve', 'HANDOFF', 'ok', 'UNVERIFIED'],
    ['done', undefined, 'ok', 'UNVERIFIED'],
    ['max_steps', 'HANDOFF', 'ok', 'UNVERIFIED'],
    ['done', 'HANDOFF', '  ', 'UNVERIFIED'],
  ] as const)('%s + %s (report %j) → %s', (ending, route, report, verdict) => {
    expect(routeVerdict(ending, { route, report })).toBe(verdict);
  });
});

test('PASS under verifier_pass: learned from, then terminal; no Curriculum', async () => {
  const script = new Script(['done'], [pass]);
  const r = await run(script);
  expect(r).toMatchObject({ status: 'passed', verdict: 'PASS', bankIn: 'b0' });
  expect(r.bank.hash).toBe('b1');
  expect(isTransitionReady(r)).toBe(true);
  expect(script.log).toEqual([
    'target attempt 1 bank b0',
    'open target1',
    'act target1 → done',
    'verify target1 → HANDOFF',
    'propose target PASS',
    'install target-PASS',
    'release target1',
  ]);
  expect(script.curriculumRequests).toEqual([]);
});

test('without learnOnPass a PASS leaves the bank as it was', async () => {
  const r = await run(new Script(['done'], [pass]), { learnOnPass: false });
  expect(r.bank.hash).toBe('b0');
  expect(r.attempts).toEqual([expect.objectContaining({ bankBefore: 'b0', bankAfter: 'b0' })]);
});

test('FAIL → learning → Curriculum → practice → READY → a fresh attempt that passes', async () => {
  const script = new Script(
    ['evolve', 'done', 'done'],
    [fail, pass, pass],
    [project('proj-a'), { kind: 'READY' }],
  );
  const r = await run(script);
  expect(r).toMatchObject({ status: 'passed', verdict: 'PASS' });
  expect(script.log).toEqual([
    'target attempt 1 bank b0',
    'open target1',
    'act target1 → evolve',
    'verify target1 → EVOLVE',
    // Learned from in the failed environment, which is released only afterwards.
    'propose target FAIL',
    'install target-FAIL',
    'release target1',
    'curriculum practice → project',
    'practice 1 proj-a',
    'open practice2',
    'act practice2 → done',
    'verify practice2 → HANDOFF',
    'propose practice PASS',
    'install practice-PASS',
    'release practice2',
    'curriculum practice → READY',
    // A fresh environment (and roles) for the next attempt, with the grown bank.
    'target attempt 2 bank b2',
    'open target3',
    'act target3 → done',
    'verify target3 → HANDOFF',
    'propose target PASS',
    'install target-PASS',
    'release target3',
  ]);
  expect(r.projects).toEqual([
    expect.objectContaining({ index: 1, verdict: 'PASS', bankBefore: 'b1', bankAfter: 'b2' }),
  ]);
  // The Curriculum saw the target's report, and the project's outcome in its second turn.
  expect(script.curriculumRequests[0]).toMatchObject({
    mode: 'practice',
    verdict: 'FAIL',
    report: 'count.txt is missing',
    outcomes: [],
  });
  expect(script.curriculumRequests[1]?.outcomes).toHaveLength(1);
  expect(r.attempts.map((a) => [a.attempt, a.final, a.verdict])).toEqual([
    [1, false, 'FAIL'],
    [2, false, 'PASS'],
  ]);
});

test('STALLED → one final fresh attempt, returned whatever its verdict; no Curriculum after it', async () => {
  const script = new Script(
    ['evolve', 'evolve'],
    [fail, fail],
    [{ kind: 'STALLED', reason: 'no idea' }],
  );
  const r = await run(script);
  expect(r).toMatchObject({ status: 'final_attempt', verdict: 'FAIL', stalled: 'no idea' });
  // A FAIL on the final attempt is still learned from, but starts no Curriculum cycle.
  expect(script.log.filter((l) => l.startsWith('propose'))).toEqual([
    'propose target FAIL',
    'propose target FAIL',
  ]);
  expect(script.curriculumRequests).toHaveLength(1);
  expect(r.attempts.map((a) => a.final)).toEqual([false, true]);
  // A final FAIL after a stall is a completed development boundary.
  expect(isTransitionReady(r)).toBe(true);
});

test.each([
  ['done + EVOLVE', 'done', { route: 'EVOLVE', report: 'missing' }],
  ['evolve + HANDOFF', 'evolve', { route: 'HANDOFF', report: 'ok' }],
  ['no route', 'done', { route: undefined, report: 'ok' }],
  ['empty report', 'done', { route: 'HANDOFF', report: '' }],
  ['a step cap', 'max_steps', { route: 'HANDOFF', report: 'ok' }],
] as const)(
  'UNVERIFIED (%s) ends the target with an error status, never learned from',
  async (_n, ending, report) => {
    const script = new Script([ending], [{ ...report }], [project('never')]);
    const r = await run(script, { stopPolicy: 'curriculum_review' });
    expect(r).toMatchObject({ status: 'unverified', verdict: 'UNVERIFIED' });
    expect(isTransitionReady(r)).toBe(false);
    expect(r.bank.hash).toBe('b0');
    expect(script.log.some((l) => l.startsWith('propose') || l.startsWith('curriculum'))).toBe(
      false,
    );
  },
);

test('a refused publication goes back to the Curriculum with the corrective message', async () => {
  const script = new Script(
    ['evolve', 'done', 'done'],
    [fail, pass, pass],
    [
      { kind: 'project', publication: { root: 'proj-b', fixtures: {} } },
      { kind: 'project', publication: {} },
      project('proj-b'),
      { kind: 'READY' },
    ],
  );
  const r = await run(script);
  expect(r.status).toBe('passed');
  expect(r.refusedPublications).toBe(2);
  expect(script.curriculumRequests.map((q) => q.correction)).toEqual([
    undefined,
    'proj-b was absent, empty, or not replayable',
    'the publication names no project root',
    undefined,
  ]);
  // Only the accepted publication was practised.
  expect(script.log.filter((l) => l.startsWith('practice'))).toEqual(['practice 1 proj-b']);
});

test('too many refused publications count as a stall', async () => {
  const bad: CurriculumReply<Project> = { kind: 'project', publication: {} };
  const script = new Script(['evolve', 'done'], [fail, pass], [bad, bad, bad]);
  const r = await run(script, { maxRefusedPublications: 2 });
  expect(r).toMatchObject({ status: 'passed', refusedPublications: 3 });
  expect(r.stalled).toMatch(
    /^3 publications refused; the last: the publication names no project root/,
  );
  expect(r.attempts.map((a) => a.final)).toEqual([false, true]);
});

test('the host refuses proposals for another target, an older bank or another verdict', async () => {
  for (const [change, reason] of [
    [{ targetId: 't2' }, /names target "t2", not "t1"/],
    [{ baseHash: 'stale' }, /against bank stale, not the installed b0/],
    [{ verdict: 'PASS' }, /says PASS, the routed verdict is FAIL/],
  ] as const) {
    const script = new Script(['evolve', 'evolve'], [fail, fail], [{ kind: 'STALLED' }]);
    const base = script.propose;
    script.propose = (input) => ({ ...base(input), ...change });
    const r = await run(script);
    expect(r.bank.hash).toBe('b0');
    expect(r.attempts[0]?.learningRefused).toMatch(reason);
    expect(script.log.some((l) => l.startsWith('install'))).toBe(false);
  }
});

test('a proposal that breaks the bank boundaries is refused with the reason', async () => {
  const script = new Script(['evolve', 'evolve'], [fail, fail], [{ kind: 'STALLED' }]);
  script.refuseInstall = 'lessons/../x.md: must not contain ..';
  const r = await run(script);
  expect(r.bank.hash).toBe('b0');
  expect(r.attempts[0]).toMatchObject({
    bankAfter: 'b0',
    learningRefused: 'lessons/../x.md: must not contain ..',
  });
});

test('curriculum_review: a PASS with a zero-project review stays terminal in its environment', async () => {
  const script = new Script(['done'], [pass], [{ kind: 'READY' }]);
  const r = await run(script, { stopPolicy: 'curriculum_review' });
  expect(r.status).toBe('passed');
  // The Curriculum reviewed while the passed environment was still held.
  expect(script.log.indexOf('curriculum review → READY')).toBeLessThan(
    script.log.indexOf('release target1'),
  );
});

test('curriculum_review: practice after a PASS needs a fresh target test', async () => {
  const script = new Script(
    ['done', 'done', 'done'],
    [pass, pass, pass],
    [project('proj-c'), { kind: 'READY' }, { kind: 'READY' }],
  );
  const r = await run(script, { stopPolicy: 'curriculum_review' });
  expect(r.status).toBe('passed');
  const log = script.log;
  // The passed environment goes before the practice one opens; then a second attempt runs.
  expect(log.indexOf('release target1')).toBeLessThan(log.indexOf('practice 1 proj-c'));
  expect(r.attempts.map((a) => a.verdict)).toEqual(['PASS', 'PASS']);
  expect(script.curriculumRequests.map((q) => q.mode)).toEqual(['review', 'review', 'review']);
});

test('an unverified practice outcome is kept for the Curriculum and never learned from', async () => {
  const script = new Script(
    ['evolve', 'done', 'done'],
    [fail, { route: 'EVOLVE', report: 'not done' }, pass],
    [project('proj-d'), { kind: 'READY' }],
  );
  const r = await run(script);
  expect(r.projects).toEqual([
    expect.objectContaining({ verdict: 'UNVERIFIED', bankBefore: 'b1', bankAfter: 'b1' }),
  ]);
  expect(script.log.filter((l) => l.startsWith('propose'))).toEqual([
    'propose target FAIL',
    'propose target PASS',
  ]);
  expect(script.curriculumRequests[1]?.outcomes[0]?.verdict).toBe('UNVERIFIED');
});

test('a Curriculum that keeps answering READY cannot loop forever: the last attempt is final', async () => {
  const script = new Script(
    ['evolve', 'evolve', 'evolve'],
    [fail, fail, fail],
    [{ kind: 'READY' }, { kind: 'READY' }],
  );
  const r = await run(script, { maxAttempts: 3 });
  expect(r).toMatchObject({ status: 'final_attempt', verdict: 'FAIL' });
  expect(r.attempts.map((a) => a.final)).toEqual([false, false, true]);
});

test('an infrastructure failure propagates and releases the environment', async () => {
  const script = new Script(['evolve', 'crash'], [fail], [project('proj-e')]);
  await expect(run(script)).rejects.toThrow('the model provider is down');
  expect(script.released).toEqual(['target1', 'practice2']);
});

test('a cancelled loop stops at the next step and releases what it holds', async () => {
  const abort = new AbortController();
  const script = new Script(['evolve'], [fail], []);
  script.curriculum = async () => {
    abort.abort(new TroupeError('CANCELLED', 'job cancelled'));
    return { kind: 'READY' };
  };
  await expect(run(script, { signal: abort.signal })).rejects.toThrow('job cancelled');
});
