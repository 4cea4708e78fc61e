import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import * as path from 'node:path';
import { errorCode, type Job__Output, type Logger, noopLogger, TroupeError } from '@troupe/proto';
import { budgetListUpdates } from './budget-stream';
import { type DashboardApi } from './dashboard-api';
import { DashboardAuth } from './dashboard-auth';
import { evolveView } from './evolve-view';
import { eventTail, resumeSequence, streamJobEvents } from './job-event-stream';
import { type BrowserListUpdate, streamList } from './list-stream';
import { ResultsCache } from './results-cache';
import { isPlanWindow, parseTaskPageQuery, taskPage, windowPage } from './task-page';
import { trajectoryView } from './trajectory-view';
import { mapAsync } from './sse';

/** What a caller passes to {@link DashboardServer.start}. */
export interface DashboardServerOptions {
  /** The job API the pages read (a `TroupeClient`). */
  api: DashboardApi;
  /** The job API's bearer token: the login page accepts exactly this. */
  token: string;
  /** Interface to bind. @default '127.0.0.1' */
  host?: string;
  /** Port; 0 picks a free one (see {@link DashboardServer.port}). @default 0 */
  port?: number;
  /**
   * Whether logged-in users may cancel jobs and drain nodes from the pages. Off by default: the
   * dashboard is then read-only whoever logs in.
   * @default false
   */
  allowActions?: boolean;
  /** Mark the session cookie `Secure` (when a TLS proxy fronts the dashboard). @default false */
  secureCookie?: boolean;
  logger?: Logger;
  /** Folder of the pages' HTML/JS/CSS. @default the `assets` folder next to this file */
  assetsDir?: string;
}

const ASSETS: Record<string, string> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'index.html': 'text/html; charset=utf-8',
  'login.html': 'text/html; charset=utf-8',
};

const HTTP_STATUS: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  UNAVAILABLE: 503,
  TIMEOUT: 504,
};

/** Security headers of every page and API answer. */
const BASE_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};
const PAGE_CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'";

const JOB_ID = /^[A-Za-z0-9_-]{1,128}$/;
const TASK_ID = /^[A-Za-z0-9._:-]{1,200}$/;
const HOST_ID = /^[A-Za-z0-9._-]{1,128}$/;
const MAX_FORM_BYTES = 4096;
const MAX_ARTIFACT_VIEW_BYTES = 32 * 1024 * 1024;

/**
 * The live web dashboard: an HTTP server (Node's `http`) that serves hand-written pages from
 * {@link DashboardServerOptions.assetsDir} and a small JSON/SSE API over the job API. It holds no
 * state of its own besides login sessions and a short results cache, so any number of them may
 * run against one cluster (`troupe coordinator --dashboard-port`, `troupe dev`, `troupe
 * dashboard`).
 */
export class DashboardServer {
  private readonly auth: DashboardAuth;
  private readonly cache: ResultsCache;
  private readonly assets = new Map<string, Buffer>();
  private readonly streams = new Set<AbortController>();
  private readonly log: Logger;

  private constructor(
    private readonly options: DashboardServerOptions,
    private readonly server: Server,
  ) {
    this.auth = new DashboardAuth({ token: options.token });
    this.cache = new ResultsCache({ api: options.api });
    this.log = (options.logger ?? noopLogger).child({ component: 'dashboard' });
    const dir = options.assetsDir ?? path.join(__dirname, 'assets');
    for (const name of Object.keys(ASSETS)) {
      try {
        this.assets.set(name, readFileSync(path.join(dir, name)));
      } catch (err) {
        throw new TroupeError(
          'INTERNAL',
          `dashboard asset ${name} is missing in ${dir} (run npm run build, which copies them)`,
          { cause: err },
        );
      }
    }
  }

  /** Starts serving; resolves once the port is bound. */
  static async start(options: DashboardServerOptions): Promise<DashboardServer> {
    const server = createServer();
    const dashboard = new DashboardServer(options, server);
    server.on('request', (req, res) => dashboard.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    dashboard.log.info({ url: dashboard.url }, 'dashboard serving');
    return dashboard;
  }

  /** The bound port. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The dashboard's URL (`http://host:port/`). */
  get url(): string {
    const host = this.options.host ?? '127.0.0.1';
    const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
    return `http://${shown.includes(':') ? `[${shown}]` : shown}:${this.port}/`;
  }

  /**
   * Ends every open event stream (browsers reconnect with `Last-Event-ID`). Used by `stop`, and by
   * tests that check that a reconnect loses nothing.
   */
  dropStreams(): number {
    const n = this.streams.size;
    for (const c of this.streams) c.abort(new TroupeError('CANCELLED', 'stream dropped'));
    return n;
  }

  /** Stops serving: ends event streams and closes connections. */
  async stop(): Promise<void> {
    this.dropStreams();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.route(req, res).catch((err: unknown) => this.fail(res, err));
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    const p = url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'GET' && p.startsWith('/assets/')) {
      const name = p.slice('/assets/'.length);
      if (name !== 'login.html' && name !== 'index.html' && this.assets.has(name)) {
        return this.asset(res, name, 200);
      }
      return this.json(res, 404, { code: 'NOT_FOUND', message: `no asset ${name}` });
    }
    if (p === '/login') {
      if (method === 'POST') return this.login(req, res);
      return this.asset(res, 'login.html', 200);
    }
    if (p === '/logout' && method === 'POST') {
      res.writeHead(303, {
        ...BASE_HEADERS,
        'set-cookie': this.auth.logout(req),
        location: '/login',
      });
      res.end();
      return;
    }
    if (!this.auth.isLoggedIn(req)) {
      if (p.startsWith('/api/')) {
        return this.json(res, 401, { code: 'UNAUTHENTICATED', message: 'log in first' });
      }
      res.writeHead(303, { ...BASE_HEADERS, location: '/login' });
      res.end();
      return;
    }
    if (p === '/' && method === 'GET') return this.asset(res, 'index.html', 200);
    if (p.startsWith('/api/')) return this.api(req, res, method, p.slice(5).split('/'), url);
    return this.json(res, 404, { code: 'NOT_FOUND', message: `no page ${p}` });
  }

  private async api(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    parts: string[],
    url: URL,
  ): Promise<void> {
    const signal = AbortSignal.timeout(30_000);
    const [root, id, sub, subId, subSub] = parts.map((x) => decodeURIComponent(x));
    if (method === 'GET' && root === 'info' && parts.length === 1) {
      return this.json(res, 200, { allowActions: this.options.allowActions === true });
    }
    if (method === 'GET' && root === 'jobs' && parts.length === 1) {
      const pageToken = url.searchParams.get('pageToken') ?? '';
      const page = await this.options.api.listJobs(
        { pageSize: 50, ...(pageToken ? { pageToken } : {}) },
        { signal },
      );
      return this.json(res, 200, {
        jobs: page.jobs.map((j) => jobSummary(j)),
        nextPageToken: page.nextPageToken,
        nowMs: Date.now(),
      });
    }
    if (method === 'GET' && root === 'stream' && parts.length === 2) {
      if (id === 'jobs') {
        return this.relay(res, (signal) =>
          mapAsync(this.options.api.watchJobs({ limit: 50 }, { signal }), (u) => ({
            snapshot: u.snapshot,
            items: u.jobs.map((j) => jobSummary(j, u.atUnixMs)),
            removed: u.removedJobIds,
            nowMs: u.atUnixMs,
          })),
        );
      }
      if (id === 'budget') {
        return this.relay(res, (signal) => budgetListUpdates(this.options.api, signal));
      }
      if (id === 'nodes') {
        return this.relay(res, (signal) =>
          mapAsync(this.options.api.watchNodes({ signal }), (u) => ({
            snapshot: u.snapshot,
            items: u.nodes,
            removed: u.removedHostIds,
            nowMs: u.atUnixMs,
          })),
        );
      }
    }
    if (method === 'GET' && root === 'nodes' && parts.length === 1) {
      const nodes = await this.options.api.listNodes({ signal });
      return this.json(res, 200, { nodes, nowMs: Date.now() });
    }
    if (method === 'GET' && root === 'budget' && parts.length === 1) {
      return this.json(res, 200, await this.budget(signal));
    }
    if (method === 'POST' && root === 'nodes' && sub === 'drain' && parts.length === 3) {
      this.checkAction(req);
      checkId('hostId', id, HOST_ID);
      return this.json(res, 200, await this.options.api.drainNode(id!, 'dashboard', { signal }));
    }
    if (root !== 'jobs' || id === undefined) {
      return this.json(res, 404, { code: 'NOT_FOUND', message: `no API ${parts.join('/')}` });
    }
    checkId('jobId', id, JOB_ID);
    if (method === 'POST' && sub === 'cancel' && parts.length === 3) {
      this.checkAction(req);
      return this.json(
        res,
        200,
        jobSummary(await this.options.api.cancelJob(id, 'dashboard', { signal })),
      );
    }
    if (method !== 'GET') {
      return this.json(res, 405, { code: 'INVALID_ARGUMENT', message: `${method} not allowed` });
    }
    if (parts.length === 2) {
      const [job, results] = await Promise.all([
        this.options.api.getJob(id, { signal }),
        this.cache.summary(id, signal),
      ]);
      return this.json(res, 200, {
        job: jobSummary(job),
        spec: safeJson(job.specJson),
        aggregate: results.aggregate,
        extra: safeJson(results.aggregate?.extraJson ?? ''),
        nowMs: Date.now(),
      });
    }
    if (sub === 'events' && parts.length === 3) {
      const controller = new AbortController();
      this.streams.add(controller);
      // The response's close is the browser going away (the request's fires once it is read).
      res.on('close', () => controller.abort());
      const lastId = req.headers['last-event-id'];
      try {
        await streamJobEvents({
          api: this.options.api,
          jobId: id,
          fromSequence: resumeSequence(
            Array.isArray(lastId) ? lastId[0] : lastId,
            url.searchParams.get('after'),
          ),
          tail: eventTail(url.searchParams.get('tail')),
          res,
          signal: controller.signal,
        });
      } finally {
        this.streams.delete(controller);
      }
      return;
    }
    if (sub === 'tasks' && parts.length === 3) {
      const query = parseTaskPageQuery(url.searchParams);
      // A stretch of the plan costs its own rows; a filter, search or sort reads the whole job.
      const page = isPlanWindow(query)
        ? windowPage(await this.cache.window(id, query.offset, query.limit, signal), query)
        : taskPage(await this.cache.get(id, signal), query);
      return this.json(res, 200, page);
    }
    if (sub === 'tasks' && subId !== undefined) {
      checkId('taskId', subId, TASK_ID);
      const task = await this.cache.task(id, subId, signal);
      if (!task) throw new TroupeError('NOT_FOUND', `job ${id} has no task ${subId}`);
      if (parts.length === 4) {
        return this.json(res, 200, { ...task, details: safeJson(task.detailsJson) });
      }
      if (subSub === 'trajectory' && parts.length === 5) {
        const artifact = task.artifacts.find((a) => a.endsWith('/trajectory.jsonl'));
        if (!artifact)
          return this.json(res, 200, { steps: [], sessions: [], totalCostUsd: 0, cut: 0 });
        const { data } = await this.options.api.downloadArtifact(id, artifact, { signal });
        return this.json(res, 200, {
          artifact,
          ...trajectoryView(data.toString('utf8'), task.costUsd),
        });
      }
      if (subSub === 'evolve' && parts.length === 5) {
        const summaryPath = task.artifacts.find((a) => a.endsWith('/journal-summary.json'));
        if (!summaryPath) {
          throw new TroupeError(
            'NOT_FOUND',
            `task ${subId} of job ${id} has no journal-summary.json (yet)`,
          );
        }
        const journalPath = task.artifacts.find((a) => a.endsWith('/journal.jsonl'));
        const [summary, journal] = await Promise.all([
          this.options.api.downloadArtifact(id, summaryPath, { signal }),
          journalPath ? this.options.api.downloadArtifact(id, journalPath, { signal }) : undefined,
        ]);
        return this.json(
          res,
          200,
          evolveView(summary.data.toString('utf8'), journal?.data.toString('utf8')),
        );
      }
    }
    if (sub === 'artifact' && parts.length === 3) {
      const artifactPath = url.searchParams.get('path') ?? '';
      if (!artifactPath.startsWith(`jobs/${id}/`) || artifactPath.includes('..')) {
        throw new TroupeError(
          'INVALID_ARGUMENT',
          `path: must start with jobs/${id}/ and contain no ..`,
          {
            details: { field: 'path', rule: `must start with jobs/${id}/` },
          },
        );
      }
      const { data, contentType } = await this.options.api.downloadArtifact(id, artifactPath, {
        signal,
      });
      if (data.length > MAX_ARTIFACT_VIEW_BYTES) {
        throw new TroupeError(
          'INVALID_ARGUMENT',
          `path: artifact larger than ${MAX_ARTIFACT_VIEW_BYTES} bytes; use troupe artifact`,
          {
            details: { field: 'path', rule: 'at most 32 MiB through the dashboard' },
          },
        );
      }
      res.writeHead(200, {
        ...BASE_HEADERS,
        'content-type': contentType || 'application/octet-stream',
        // Artifacts are task output: never run their scripts at the dashboard's origin.
        'content-security-policy': 'sandbox',
        'cache-control': 'private, max-age=60',
      });
      res.end(data);
      return;
    }
    return this.json(res, 404, { code: 'NOT_FOUND', message: `no API ${parts.join('/')}` });
  }

  /**
   * Serves a list watch as server-sent events until the browser goes away or the server stops
   * ({@link dropStreams} ends these too; the browser reconnects to a fresh snapshot).
   */
  private async relay(
    res: ServerResponse,
    updates: (signal: AbortSignal) => AsyncIterable<BrowserListUpdate>,
  ): Promise<void> {
    const controller = new AbortController();
    this.streams.add(controller);
    res.on('close', () => controller.abort());
    try {
      await streamList({ updates: updates(controller.signal), res, signal: controller.signal });
    } finally {
      this.streams.delete(controller);
    }
  }

  /**
   * The cluster's budget ledger (GetBudget): scopes with limits, spend and reservations, the name
   * of each job scope's job, and the budgets of jobs whose scope the ledger has folded away (a
   * finished job's): limit from the spec, spend from the job's progress. Jobs: the newest 500.
   */
  private async budget(signal: AbortSignal): Promise<unknown> {
    const [budget, page] = await Promise.all([
      this.options.api.getBudget('', { signal }),
      this.options.api.listJobs({ pageSize: 500 }, { signal }),
    ]);
    const inLedger = new Set(budget.scopes.map((s) => s.scope));
    const jobs: Record<string, { jobId: string; name: string; state: string }> = {};
    const closed: unknown[] = [];
    for (const j of page.jobs) {
      const scope = `job:${j.jobId}`;
      if (inLedger.has(scope)) {
        jobs[scope] = { jobId: j.jobId, name: j.name, state: String(j.state) };
        continue;
      }
      const spec = safeJson(j.specJson) as { budget?: { usd?: number; tokens?: number } } | null;
      if (!spec?.budget) continue;
      closed.push({
        scope,
        jobId: j.jobId,
        name: j.name,
        state: String(j.state),
        limitUsd: spec.budget.usd ?? null,
        limitTokens: spec.budget.tokens ?? null,
        spentUsd: j.progress?.costUsd ?? 0,
      });
    }
    return { ...budget, jobs, closed };
  }

  /** Actions need `allowActions` and a header a cross-site form cannot send. */
  private checkAction(req: IncomingMessage): void {
    if (this.options.allowActions !== true) {
      throw new TroupeError(
        'PERMISSION_DENIED',
        'this dashboard is read-only (start it with --dashboard-actions to cancel jobs and drain nodes)',
      );
    }
    if (req.headers['x-troupe-action'] !== '1') {
      throw new TroupeError('PERMISSION_DENIED', 'actions need the x-troupe-action: 1 header');
    }
  }

  private async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_FORM_BYTES) {
        return this.json(res, 413, { code: 'INVALID_ARGUMENT', message: 'token: too long' });
      }
      chunks.push(chunk);
    }
    const token = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('token') ?? '';
    if (!this.auth.checkToken(token)) {
      this.log.warn({ remote: req.socket.remoteAddress }, 'dashboard login refused');
      res.writeHead(303, { ...BASE_HEADERS, location: '/login?error=1' });
      res.end();
      return;
    }
    res.writeHead(303, {
      ...BASE_HEADERS,
      'set-cookie': this.auth.login(this.options.secureCookie === true),
      location: '/',
    });
    res.end();
  }

  private asset(res: ServerResponse, name: string, status: number): void {
    res.writeHead(status, {
      ...BASE_HEADERS,
      'content-type': ASSETS[name]!,
      'content-security-policy': PAGE_CSP,
      'cache-control': 'no-cache',
    });
    res.end(this.assets.get(name));
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    res.writeHead(status, {
      ...BASE_HEADERS,
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
    });
    res.end(JSON.stringify(body));
  }

  private fail(res: ServerResponse, err: unknown): void {
    const code = errorCode(err);
    const status = HTTP_STATUS[code] ?? 500;
    if (status >= 500) this.log.warn({ err }, 'dashboard request failed');
    const details = err instanceof TroupeError ? err.details : undefined;
    this.json(res, status, {
      code,
      message: err instanceof Error ? err.message : String(err),
      ...(details ? { details } : {}),
    });
  }
}

function checkId(field: string, value: string | undefined, rule: RegExp): void {
  if (value === undefined || !rule.test(value)) {
    throw new TroupeError('INVALID_ARGUMENT', `${field}: must match ${rule.source}`, {
      details: { field, rule: `must match ${rule.source}` },
    });
  }
}

function safeJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** A job as the lists show it: progress, pass rate, spend and an ETA from the rate so far. */
export function jobSummary(j: Job__Output, nowMs = Date.now()): Record<string, unknown> {
  const p = j.progress ?? { total: 0, done: 0, passed: 0, failed: 0, running: 0, costUsd: 0 };
  const state = String(j.state);
  let etaMs: number | null = null;
  if (state === 'RUNNING' && j.startedUnixMs && p.done > 0 && p.total > p.done) {
    etaMs = Math.round(((nowMs - j.startedUnixMs) / p.done) * (p.total - p.done));
  }
  return {
    jobId: j.jobId,
    name: j.name,
    kind: j.kind,
    state,
    reason: j.reason,
    labels: j.labels,
    createdMs: j.createdUnixMs,
    startedMs: j.startedUnixMs ?? null,
    finishedMs: j.finishedUnixMs ?? null,
    total: p.total,
    done: p.done,
    passed: p.passed,
    failed: p.failed,
    running: p.running,
    costUsd: p.costUsd,
    passRate: p.done > 0 ? p.passed / p.done : null,
    etaMs,
  };
}
