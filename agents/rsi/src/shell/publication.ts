import { AgentStopReason } from '@troupe/agents';
import { z } from 'zod';
import { type CurriculumReply } from '../loop/target-loop';
import { type RoleRunResult, throwIfInfrastructure } from './finish-protocol';
import { workspacePathRule } from './shell-task';

/**
 * A Curriculum publication as it came back: a project (root, body, fixture tree; the host checks
 * it with {@link checkShellPublication} before any practice), or a reply that was no valid
 * publication at all, with the problem — which goes back to the Curriculum as a correction.
 */
export type ShellPublication =
  | {
      /** The project's directory, relative to the workspace. */
      root?: string;
      /** The practice task, as the project Actor is given it. */
      body: string;
      /** Workspace-relative path (under `root`) → text: the captured fixture tree. */
      fixtures?: Record<string, string>;
    }
  | { malformed: string };

/** An accepted publication: one that {@link checkShellPublication} found replayable. */
export interface PracticeProject {
  root: string;
  body: string;
  fixtures: Record<string, string>;
}

/** Largest fixture tree, in bytes of text: it travels in one `create` message. */
export const MAX_FIXTURE_BYTES = 256 * 1024;

/** The JSON the Curriculum ends each turn with, as `finish_task`'s summary. */
export const CurriculumDecisionSchema = z.discriminatedUnion(
  'decision',
  [
    z.object({
      decision: z.literal('project'),
      root: z.string().optional(),
      body: z.string().trim().min(1, 'must not be empty'),
      fixtures: z.record(z.string(), z.string({ error: 'must be text' })).optional(),
    }),
    z.object({ decision: z.literal('READY') }),
    z.object({ decision: z.literal('STALLED'), reason: z.string().optional() }),
  ],
  { error: 'must be one of "project", "READY", "STALLED"' },
);

/** The reply format, as the Curriculum's instruction and every correction state it. */
export const CURRICULUM_REPLY_FORMAT =
  'End every turn with finish_task whose summary is exactly one JSON object and nothing else: ' +
  '{"decision":"project","root":"<workspace-relative dir>","body":"<the practice task>",' +
  '"fixtures":{"<root>/<file>":"<text>", ...}} to publish a practice project, ' +
  '{"decision":"READY"} when the Actor should try the target again, or ' +
  '{"decision":"STALLED","reason":"<why>"} when further practice will not help.';

function issuePath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? 'the reply' : path.map(String).join('.');
}

/** Removes one surrounding Markdown code fence (models add them around JSON). */
function unfence(text: string): string {
  const m = /^```[A-Za-z]*\r?\n([\s\S]*?)\r?\n?```$/.exec(text.trim());
  return m ? (m[1] ?? '') : text.trim();
}

/**
 * The Curriculum's reply from its turn's result. Never throws for what the model wrote: a turn
 * that did not end with `finish_task`, a summary that is not JSON or not of the schema becomes a
 * `project` whose publication is `{malformed}` — the host refuses it and the problem goes back to
 * the Curriculum. Infrastructure stops throw.
 */
export function parseCurriculumReply(
  sessionId: string,
  r: RoleRunResult,
): CurriculumReply<ShellPublication> {
  throwIfInfrastructure('Curriculum', sessionId, r);
  const malformed = (problem: string): CurriculumReply<ShellPublication> => ({
    kind: 'project',
    publication: { malformed: problem },
  });
  if (r.stopReason !== AgentStopReason.FINISHED) {
    return malformed(`the turn ended with ${r.stopReason}, not with finish_task`);
  }
  let json: unknown;
  try {
    json = JSON.parse(unfence(r.finalText));
  } catch (err) {
    return malformed(
      `the finish_task summary is not JSON (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  const parsed = CurriculumDecisionSchema.safeParse(json);
  if (!parsed.success) {
    return malformed(
      parsed.error.issues.map((i) => `${issuePath(i.path)}: ${i.message}`).join('; '),
    );
  }
  const d = parsed.data;
  if (d.decision === 'READY') return { kind: 'READY' };
  if (d.decision === 'STALLED') {
    return { kind: 'STALLED', ...(d.reason?.trim() ? { reason: d.reason.trim() } : {}) };
  }
  return {
    kind: 'project',
    publication: {
      body: d.body,
      ...(d.root !== undefined ? { root: d.root } : {}),
      ...(d.fixtures !== undefined ? { fixtures: d.fixtures } : {}),
    },
  };
}

/**
 * The host's check of a publication (RSIAgent's `unified_evolution`): undefined when it names a
 * project root and carries a non-empty fixture tree that can be replayed under it; otherwise the
 * corrective message sent back to the Curriculum, in the seed's form `<root> was absent, empty,
 * or not replayable`, followed by what exactly is wrong. A malformed reply gets the problem and
 * the reply format.
 */
export function checkShellPublication(p: ShellPublication): string | undefined {
  if ('malformed' in p) {
    return `your reply is not a valid publication: ${p.malformed}. ${CURRICULUM_REPLY_FORMAT}`;
  }
  const root = p.root?.trim() ?? '';
  const refuse = (detail: string): string =>
    `${root === '' ? 'PROJECT_ROOT' : root} was absent, empty, or not replayable: ${detail}`;
  if (root === '') return refuse('the publication names no project root');
  const rootRule = workspacePathRule(root);
  if (rootRule !== undefined) return refuse(`the root ${rootRule}`);
  const fixtures = Object.entries(p.fixtures ?? {});
  if (fixtures.length === 0) return refuse('the fixture tree is missing or empty');
  let bytes = 0;
  for (const [path, text] of fixtures) {
    const rule = workspacePathRule(path);
    if (rule !== undefined) return refuse(`fixture ${JSON.stringify(path)} ${rule}`);
    if (!path.startsWith(`${root}/`)) {
      return refuse(
        `fixture ${JSON.stringify(path)} lies outside the root (it must start with "${root}/")`,
      );
    }
    bytes += Buffer.byteLength(text);
  }
  if (bytes > MAX_FIXTURE_BYTES) {
    return refuse(`the fixtures hold ${bytes} bytes, more than ${MAX_FIXTURE_BYTES}`);
  }
  return undefined;
}

/** The publication as an accepted project, or undefined when the host would refuse it. */
export function acceptedProject(p: ShellPublication): PracticeProject | undefined {
  if ('malformed' in p || checkShellPublication(p) !== undefined) return undefined;
  return { root: (p.root ?? '').trim(), body: p.body, fixtures: p.fixtures ?? {} };
}
