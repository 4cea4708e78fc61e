import { TroupeError, type JobResults__Output, type TaskResult__Output } from '@troupe/proto';
import { z } from 'zod';

/** Most rows one page request may ask for. */
export const MAX_PAGE_ROWS = 500;

/** Query of one page of a job's task table (`GET /api/jobs/<id>/tasks?…`). */
export const TaskPageQuerySchema = z
  .object({
    offset: z.coerce.number().int().min(0, 'must be >= 0').default(0),
    limit: z.coerce.number().int().min(1, 'must be >= 1').max(MAX_PAGE_ROWS).default(100),
    /** Only tasks of this status, e.g. `TASK_FAILED`. */
    status: z
      .string()
      .regex(/^[A-Z_]{1,40}$/, 'must be a task status such as TASK_FAILED')
      .optional(),
    /** Case-insensitive substring of the task id, stop reason or error. */
    q: z.string().max(200, 'must be at most 200 characters').optional(),
    sort: z.enum(['index', 'id', 'status', 'score', 'cost', 'duration']).default('index'),
    desc: z.enum(['0', '1']).default('0'),
  })
  .strict();
/** A validated {@link TaskPageQuerySchema}. */
export type TaskPageQuery = z.output<typeof TaskPageQuerySchema>;

/** One row of the task table. */
export interface TaskRow {
  index: number;
  taskId: string;
  status: string;
  score: number | null;
  attempts: number;
  costUsd: number;
  tokens: number;
  durationMs: number;
  stopReason: string;
  error: string;
  artifacts: number;
}

/** A page of rows, with the count that matched the filter (for the virtual list's height). */
export interface TaskPage {
  total: number;
  matched: number;
  offset: number;
  rows: TaskRow[];
}

/** Parses query parameters; bad input is `INVALID_ARGUMENT` naming the parameter and the rule. */
export function parseTaskPageQuery(params: URLSearchParams): TaskPageQuery {
  const raw: Record<string, string> = {};
  for (const [k, v] of params) raw[k] = v;
  const parsed = TaskPageQuerySchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.length > 0 ? issue.path.join('.') : 'query';
    throw new TroupeError('INVALID_ARGUMENT', `${field}: ${issue.message}`, {
      details: { field, rule: issue.message },
    });
  }
  return parsed.data;
}

function rowOf(t: TaskResult__Output, index: number): TaskRow {
  return {
    index,
    taskId: t.taskId,
    status: String(t.status),
    score: t.score ?? null,
    attempts: t.attempts,
    costUsd: t.costUsd,
    tokens: t.tokens,
    durationMs: t.durationMs,
    stopReason: t.stopReason,
    error: t.error.length > 300 ? `${t.error.slice(0, 300)}…` : t.error,
    artifacts: t.artifacts.length,
  };
}

const SORT_KEYS: Record<TaskPageQuery['sort'], (r: TaskRow) => number | string> = {
  index: (r) => r.index,
  id: (r) => r.taskId,
  status: (r) => r.status,
  score: (r) => r.score ?? -Infinity,
  cost: (r) => r.costUsd,
  duration: (r) => r.durationMs,
};

/**
 * Whether the page is a plain stretch of the plan (no filter, no search, plan order): such a page
 * is read as one `GetResults` page from its offset ({@link windowPage}) and needs none of the
 * job's other results.
 */
export function isPlanWindow(query: TaskPageQuery): boolean {
  return query.status === undefined && !query.q && query.sort === 'index' && query.desc === '0';
}

/**
 * A {@link isPlanWindow} page from a `GetResults` page that starts at `query.offset` (its tasks
 * are the rows; the aggregate gives the job's size).
 */
export function windowPage(page: JobResults__Output, query: TaskPageQuery): TaskPage {
  const total = page.aggregate?.total ?? query.offset + page.tasks.length;
  return {
    total,
    matched: total,
    offset: query.offset,
    rows: page.tasks.slice(0, query.limit).map((t, k) => rowOf(t, query.offset + k)),
  };
}

/**
 * One page of a job's tasks: filtered, sorted and cut on the server, so that the browser only
 * ever holds the rows it shows (a 100,000-task job sends 100 rows, not 100,000).
 */
export function taskPage(results: JobResults__Output, query: TaskPageQuery): TaskPage {
  const all = rowsOf(results);
  const needle = query.q?.toLowerCase();
  let rows =
    query.status === undefined && !needle
      ? all
      : all.filter(
          (r) =>
            (query.status === undefined || r.status === query.status) &&
            (!needle ||
              r.taskId.toLowerCase().includes(needle) ||
              r.stopReason.toLowerCase().includes(needle) ||
              r.error.toLowerCase().includes(needle)),
        );
  if (query.sort !== 'index' || query.desc === '1') {
    const key = SORT_KEYS[query.sort];
    const sign = query.desc === '1' ? -1 : 1;
    rows = [...rows].sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      return (ka < kb ? -1 : ka > kb ? 1 : a.index - b.index) * sign;
    });
  }
  return {
    total: all.length,
    matched: rows.length,
    offset: query.offset,
    rows: rows.slice(query.offset, query.offset + query.limit),
  };
}

/** The rows of one results object, built once however many pages are read from it. */
const indexes = new WeakMap<JobResults__Output, TaskRow[]>();

function rowsOf(results: JobResults__Output): TaskRow[] {
  let rows = indexes.get(results);
  if (!rows) {
    rows = results.tasks.map((t, i) => rowOf(t, i));
    indexes.set(results, rows);
  }
  return rows;
}
