import { invalidArgument, NamePattern } from '@troupe/proto';
import { z } from 'zod';

// Budget scope ids name a node of a budget tree. The kind is part of the id so that a scope's
// place in the tree can be checked without a lookup (a job hangs under the cluster, an agent under
// its own job or under another agent of the same job), and so ids stay readable in logs, errors and
// metric labels.

/** The kinds of budget scope. */
export const ScopeKind = {
  /** `cluster`: the whole cluster; only ever a root. */
  CLUSTER: 'cluster',
  /** `job:<jobId>`: one job; under `cluster`, or the root of its own ledger. */
  JOB: 'job',
  /** `agent:<jobId>/<sessionId>`: one agent instance; under its job or under another agent of it. */
  AGENT: 'agent',
} as const;

/** One of the {@link ScopeKind} values. */
export type ScopeKind = (typeof ScopeKind)[keyof typeof ScopeKind];

/** A parsed, valid budget scope id. */
export type ParsedScopeId =
  | { id: 'cluster'; kind: 'cluster' }
  | { id: string; kind: 'job'; jobId: string }
  | { id: string; kind: 'agent'; jobId: string; sessionId: string };

/** The rule every scope id follows, as quoted in `INVALID_ARGUMENT` messages. */
export const SCOPE_ID_RULE =
  'must be `cluster`, `job:<jobId>` or `agent:<jobId>/<sessionId>` (ids match [A-Za-z0-9_-]{1,128})';

const PART = NamePattern.JOB_ID;
/** Longest job id whose job scope can be the root of a ledger (its actor id is `job-<jobId>`). */
const MAX_ROOT_JOB_ID_CHARS = 124;

/** The parsed scope id, or `undefined` when `value` is not a valid one. */
export function tryParseScopeId(value: unknown): ParsedScopeId | undefined {
  if (typeof value !== 'string') return undefined;
  if (value === 'cluster') return { id: value, kind: 'cluster' };
  if (value.startsWith('job:')) {
    const jobId = value.slice(4);
    return PART.test(jobId) ? { id: value, kind: 'job', jobId } : undefined;
  }
  if (value.startsWith('agent:')) {
    const rest = value.slice(6);
    const slash = rest.indexOf('/');
    if (slash < 0) return undefined;
    const jobId = rest.slice(0, slash);
    const sessionId = rest.slice(slash + 1);
    if (!PART.test(jobId) || !PART.test(sessionId)) return undefined;
    return { id: value, kind: 'agent', jobId, sessionId };
  }
  return undefined;
}

/**
 * Parses a budget scope id.
 * @param field - the field name used in the error
 * @throws TroupeError `INVALID_ARGUMENT` naming `field` and {@link SCOPE_ID_RULE}
 */
export function parseScopeId(value: unknown, field = 'scope'): ParsedScopeId {
  const parsed = tryParseScopeId(value);
  if (!parsed) throw invalidArgument(field, SCOPE_ID_RULE, value);
  return parsed;
}

/** Zod schema of a scope id string (for message and input schemas). */
export const ScopeIdSchema = z
  .string()
  .refine((s) => tryParseScopeId(s) !== undefined, { message: SCOPE_ID_RULE });

/** The job a scope belongs to, or `undefined` for the cluster scope. */
function jobOf(scope: ParsedScopeId): string | undefined {
  return scope.kind === 'cluster' ? undefined : scope.jobId;
}

/**
 * Checks that `parent` may be the parent of `scope`: a job hangs under `cluster`; an agent under
 * `job:<its job>` or under another `agent:<its job>/…`; `cluster` has no parent.
 * @throws TroupeError `INVALID_ARGUMENT` naming `parent`
 */
export function checkParentKind(scope: ParsedScopeId, parent: ParsedScopeId): void {
  if (scope.id === parent.id)
    throw invalidArgument('parent', 'must differ from `scope`', parent.id);
  const ok =
    (scope.kind === 'job' && parent.kind === 'cluster') ||
    (scope.kind === 'agent' &&
      (parent.kind === 'job' || parent.kind === 'agent') &&
      jobOf(parent) === scope.jobId);
  if (!ok) {
    const rule =
      scope.kind === 'cluster'
        ? '`cluster` is always a root and has no parent'
        : scope.kind === 'job'
          ? `a job scope's parent must be \`cluster\``
          : `an agent scope's parent must be \`job:${scope.jobId}\` or an \`agent:${scope.jobId}/…\` scope`;
    throw invalidArgument('parent', rule, parent.id);
  }
}

/**
 * Whether `scope` can live in the ledger rooted at `root`: every scope under `cluster`; only the
 * job's own scopes under `job:<jobId>`.
 */
export function scopeFitsRoot(scope: ParsedScopeId, root: ParsedScopeId): boolean {
  if (root.kind === 'cluster') return true;
  return root.kind === 'job' && scope.kind !== 'cluster' && scope.jobId === root.jobId;
}

/**
 * Checks a ledger root: `cluster`, or `job:<jobId>` with a job id of at most 124 characters (the
 * ledger's actor id is `job-<jobId>`, and actor ids are at most 128).
 * @throws TroupeError `INVALID_ARGUMENT` naming `field`
 */
export function parseLedgerRoot(value: unknown, field = 'root'): ParsedScopeId {
  const root = parseScopeId(value, field);
  if (root.kind === 'agent') {
    throw invalidArgument(field, 'a ledger root must be `cluster` or `job:<jobId>`', value);
  }
  if (root.kind === 'job' && root.jobId.length > MAX_ROOT_JOB_ID_CHARS) {
    throw invalidArgument(
      field,
      `a root job id must have at most ${MAX_ROOT_JOB_ID_CHARS} characters`,
      value,
    );
  }
  return root;
}

/** The actor id of the ledger rooted at `root`: `cluster`, or `job-<jobId>`. */
export function ledgerActorId(root: string): string {
  const parsed = parseLedgerRoot(root);
  return parsed.kind === 'job' ? `job-${parsed.jobId}` : 'cluster';
}

/** The root scope of the ledger actor `actorId` (inverse of {@link ledgerActorId}). */
export function ledgerRootOfActorId(actorId: string): string | undefined {
  if (actorId === 'cluster') return 'cluster';
  if (actorId.startsWith('job-') && actorId.length > 4) return `job:${actorId.slice(4)}`;
  return undefined;
}
