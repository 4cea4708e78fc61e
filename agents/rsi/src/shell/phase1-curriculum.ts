import { AgentStopReason } from '@troupe/agents';
import { z } from 'zod';
import { type MemoryBank } from '../bank/memory-bank';
import { type WaveRecord } from '../phases/phase1';
import { type RoleRunResult, throwIfInfrastructure } from './finish-protocol';
import { checkShellPublication, type ShellPublication } from './publication';
import { bankInventory, WORKSPACE } from './role-prompts';

// Phase 1's Curriculum: no target, so it proposes whole waves of practice projects from the
// bank and the earlier waves' records, and decides when the bank is ready for development.

/** The Phase-1 Curriculum's reply format, as its instruction and every correction state it. */
export const PHASE1_REPLY_FORMAT =
  'End every turn with finish_task whose summary is exactly one JSON object and nothing else: ' +
  '{"decision":"wave","projects":[{"root":"<workspace-relative dir>","body":"<the practice task>",' +
  '"fixtures":{"<root>/<file>":"<text>", ...}}, ...]} to publish a wave of practice projects ' +
  '(each with its own root), {"decision":"READY"} when the bank is ready for development tasks, ' +
  'or {"decision":"STALLED","reason":"<why>"} when further practice will not help.';

/** The Phase-1 Curriculum's system instruction. */
export const PHASE1_CURRICULUM_INSTRUCTION = [
  "You are the Curriculum of Phase 1. There is no target task yet: you build an Actor's memory",
  'bank of lessons by practice before it works on development tasks in the domain described',
  'below. Each turn you propose a wave of small practice projects; every project of a wave is',
  'practised in parallel in its own Linux sandbox from the same bank, an independent Verifier',
  "judges it from the machine, and the Actor turns the Verifier's report into lessons. The",
  'lessons of a wave are committed in your order; a project whose lessons change a bank file an',
  'earlier project of the same wave changed is refused, so give each project its own topic. A',
  'project has a root directory (relative to the workspace, e.g. "practice/p1"), a body (the',
  'task the Actor gets) and fixtures: every file the project starts from, keyed by',
  'workspace-relative paths under the root, as text.',
  PHASE1_REPLY_FORMAT,
].join(' ');

const ProjectSchema = z.object({
  root: z.string().optional(),
  body: z.string().trim().min(1, 'must not be empty'),
  fixtures: z.record(z.string(), z.string({ error: 'must be text' })).optional(),
});

/** The JSON the Phase-1 Curriculum ends each turn with. */
export const Phase1DecisionSchema = z.discriminatedUnion(
  'decision',
  [
    z.object({ decision: z.literal('wave'), projects: z.array(ProjectSchema) }),
    z.object({ decision: z.literal('READY') }),
    z.object({ decision: z.literal('STALLED'), reason: z.string().optional() }),
  ],
  { error: 'must be one of "wave", "READY", "STALLED"' },
);

/** A Phase-1 Curriculum turn's reply, or the problem with it (sent back as a correction). */
export type Phase1CurriculumReply =
  | { kind: 'wave'; projects: ShellPublication[] }
  | { kind: 'READY' }
  | { kind: 'STALLED'; reason?: string }
  | { kind: 'malformed'; problem: string };

function unfence(text: string): string {
  const m = /^```[A-Za-z]*\r?\n([\s\S]*?)\r?\n?```$/.exec(text.trim());
  return m ? (m[1] ?? '') : text.trim();
}

/**
 * The reply of one Phase-1 Curriculum turn. Never throws for what the model wrote (a turn without
 * `finish_task`, a summary that is not JSON or not of the schema is `malformed`); infrastructure
 * stops throw.
 */
export function parsePhase1Reply(sessionId: string, r: RoleRunResult): Phase1CurriculumReply {
  throwIfInfrastructure('Curriculum (phase 1)', sessionId, r);
  if (r.stopReason !== AgentStopReason.FINISHED) {
    return {
      kind: 'malformed',
      problem: `the turn ended with ${r.stopReason}, not with finish_task`,
    };
  }
  let json: unknown;
  try {
    json = JSON.parse(unfence(r.finalText));
  } catch (err) {
    return {
      kind: 'malformed',
      problem: `the finish_task summary is not JSON (${err instanceof Error ? err.message : String(err)})`,
    };
  }
  const parsed = Phase1DecisionSchema.safeParse(json);
  if (!parsed.success) {
    const where = (p: readonly PropertyKey[]) => (p.length === 0 ? 'the reply' : p.join('.'));
    return {
      kind: 'malformed',
      problem: parsed.error.issues.map((i) => `${where(i.path)}: ${i.message}`).join('; '),
    };
  }
  const d = parsed.data;
  if (d.decision === 'READY') return { kind: 'READY' };
  if (d.decision === 'STALLED') {
    return { kind: 'STALLED', ...(d.reason?.trim() ? { reason: d.reason.trim() } : {}) };
  }
  return {
    kind: 'wave',
    projects: d.projects.map((p) => ({
      body: p.body,
      ...(p.root !== undefined ? { root: p.root } : {}),
      ...(p.fixtures !== undefined ? { fixtures: p.fixtures } : {}),
    })),
  };
}

/**
 * The host's check of a wave: undefined when it has 1..`maxProjects` projects with distinct
 * roots, each passing {@link checkShellPublication}; otherwise the correction sent back.
 */
export function checkPhase1Wave(
  projects: readonly ShellPublication[],
  maxProjects: number,
): string | undefined {
  if (projects.length === 0) {
    return `the wave has no project (answer READY or STALLED to end Phase 1). ${PHASE1_REPLY_FORMAT}`;
  }
  if (projects.length > maxProjects) {
    return `the wave has ${projects.length} projects, more than ${maxProjects}`;
  }
  const roots = new Set<string>();
  for (const [i, p] of projects.entries()) {
    const problem = checkShellPublication(p);
    if (problem !== undefined) return `projects[${i}]: ${problem}`;
    const root = ('root' in p ? (p.root ?? '') : '').trim();
    if (roots.has(root)) return `projects[${i}]: the root ${root} is used twice in the wave`;
    roots.add(root);
  }
  return undefined;
}

/** At most `max` characters of `text` (reports in records and prompts stay small). */
export function clip(text: string, max = 600): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function waveText(w: WaveRecord): string {
  const head = `Wave ${w.wave}: bank ${w.input.treeHash} -> ${w.output.treeHash}`;
  const lines = w.branches.map((b) => {
    const fate = b.committed
      ? `committed (${b.changed.join(', ') || 'no change'})`
      : `not committed${b.refused !== undefined ? `: ${b.refused}` : ''}`;
    const report = b.report !== undefined ? `\n    Verifier report: ${b.report}` : '';
    return `  ${b.index}. ${b.project}: ${b.verdict ?? b.status}; ${fate}${report}`;
  });
  return [head, ...lines].join('\n');
}

/** The Phase-1 Curriculum's task text of one turn. */
export function phase1CurriculumTask(input: {
  brief: string;
  wave: number;
  maxProjects: number;
  bank: MemoryBank;
  history: readonly WaveRecord[];
  /** The directory project roots are relative to. @default `/workspace` (shell sandboxes) */
  workDir?: string;
  correction?: string;
}): string {
  return [
    ...(input.correction !== undefined
      ? [`Your last reply was refused: ${input.correction}`, '']
      : []),
    `Domain of the development tasks (working directory ${input.workDir ?? WORKSPACE}):\n${input.brief}`,
    '',
    `This is wave ${input.wave}; a wave holds at most ${input.maxProjects} projects.`,
    bankInventory(input.bank),
    '',
    input.history.length === 0
      ? 'No wave has run yet.'
      : `Earlier waves:\n${input.history.map(waveText).join('\n')}`,
    '',
    PHASE1_REPLY_FORMAT,
  ].join('\n');
}
