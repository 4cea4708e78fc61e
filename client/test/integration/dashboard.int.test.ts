import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { applyFilePatch, openSearchBudgetScope, parsePatch } from '@troupe/benchmarks';
import { ensureDocker, FakeOpenAI, type ScriptedResponse, waitFor } from '@troupe/testkit';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { EmbeddedCluster } from '../../src/cli/embedded-cluster';
import { DashboardServer } from '../../src/dashboard/dashboard-server';
import { TroupeClient } from '../../src/troupe-client';

// The web dashboard end to end in a real headless browser (Debian's chromium driven by
// playwright-core): a real embedded cluster (nats-server, coordinator, Docker node agent, agent
// host with FakeOpenAI as the provider) runs real jobs, and the pages show them. Screenshots of
// every page go to test-artifacts/dashboard/ (or $TROUPE_TEST_ARTIFACTS).

jest.setTimeout(900_000);

const ROOT = path.resolve(__dirname, '../../..');
const SUITE = path.join(ROOT, 'benchmarks/suites/bugfix-mini');
const OR3 = path.join(ROOT, 'benchmarks/suites/binpacking-or3');
const KEY = 'sk-fake-dashboard-test';
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const SHOTS = process.env['TROUPE_TEST_ARTIFACTS']
  ? path.join(process.env['TROUPE_TEST_ARTIFACTS'], 'dashboard')
  : path.join(ROOT, 'test-artifacts/dashboard');

/** The evolution page's live state on `window.troupe.evolveLive`. */
interface EvolveLive {
  points: number;
  history: number[];
  finished: boolean;
}

/** What the dashboard's script exposes on `window.troupe` for tests. */
interface TroupeWindow {
  troupe: {
    eventSeqs: number[];
    streamEnded?: boolean;
    listUpdates: Record<string, number>;
    listSnapshots: Record<string, number>;
  };
}

/** Messages (`listUpdates`) or snapshots (`listSnapshots`) the page received of a list stream. */
async function listCount(
  p: Page,
  kind: 'listUpdates' | 'listSnapshots',
  list: 'jobs' | 'nodes' | 'budget',
): Promise<number> {
  return p.evaluate(([k, l]) => (globalThis as unknown as TroupeWindow).troupe[k][l] ?? 0, [
    kind,
    list,
  ] as const);
}

let fake: FakeOpenAI;
let cluster: EmbeddedCluster;
let dir: string;
let client: TroupeClient;
let dashboard: DashboardServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;

/** The scripted model: writes the reference fix of the task, then finishes. */
function reply(body: { messages: unknown[] }): ScriptedResponse {
  const messages = body.messages as { role: string; content?: string | null }[];
  const step = messages.filter((m) => m.role === 'assistant').length;
  const usage = { prompt_tokens: 1_000, completion_tokens: 100 };
  if (step === 0) {
    return { toolCalls: [{ name: 'run_terminal_command', arguments: { command: 'ls' } }], usage };
  }
  const patches = parsePatch(
    readFileSync(path.join(SUITE, 'py-lru-cache', 'solution.patch'), 'utf8'),
  );
  const files = patches.map((p) => {
    const rel = p.newPath ?? p.oldPath ?? '';
    const old = p.oldPath
      ? readFileSync(path.join(SUITE, 'py-lru-cache', 'repo', p.oldPath), 'utf8')
      : '';
    return { path: rel, content: applyFilePatch(old, p) };
  });
  if (step <= files.length) {
    return { toolCalls: [{ name: 'write_file', arguments: files[step - 1]! }], usage };
  }
  return { toolCalls: [{ name: 'finish_task', arguments: { summary: 'fixed' } }], usage };
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function logIn(p: Page, token: string): Promise<void> {
  await p.goto(dashboard.url);
  await p.waitForURL(/\/login/);
  await p.fill('#token', token);
  await p.click('#login-submit');
}

/** Logs the shared page in unless an earlier test did (tests can run alone with -t). */
async function ensureLoggedIn(): Promise<void> {
  if ((await context.cookies()).some((c) => c.name === 'troupe_dashboard')) return;
  await logIn(page, cluster.token);
  await page.waitForURL((u) => !u.pathname.startsWith('/login'));
}

async function finish(jobId: string): Promise<number> {
  let last = 0;
  for await (const e of client.watch(jobId, { signal: AbortSignal.timeout(600_000) })) {
    last = e.sequence;
  }
  return last;
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  await ensureDocker();
  fake = new FakeOpenAI({ apiKey: KEY });
  await fake.start();
  fake.setHandler((req) => reply(req.body));
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-dashboard-'));
  const modelsFile = path.join(dir, 'models.yaml');
  writeFileSync(
    modelsFile,
    `models:\n  fake:\n    baseURL: ${fake.baseURL}\n    apiKeyEnv: FAKE_LLM_KEY\n    model: fake-model\n    inputUsdPer1M: 1\n    outputUsdPer1M: 10\n    maxTokens: 1000\n`,
  );
  cluster = await EmbeddedCluster.start({
    dataDir: path.join(dir, 'data'),
    cluster: `dash-${process.pid.toString(36)}`,
    grpcPort: 0,
    advertise: false,
    modelsFile,
    env: { FAKE_LLM_KEY: KEY },
  });
  client = new TroupeClient({ address: cluster.address, token: cluster.token });
  dashboard = await DashboardServer.start({
    api: client,
    token: cluster.token,
    allowActions: true,
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  page = await context.newPage();
});

afterAll(async () => {
  await browser?.close();
  await dashboard?.stop();
  client?.close();
  await cluster?.stop();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a wrong token is refused; the API answers 401 without a session', async () => {
  const other = await browser.newContext();
  try {
    const p = await other.newPage();
    await logIn(p, 'not-the-token-at-all');
    await p.waitForURL(/\/login\?error=1/);
    expect(await p.isVisible('#login-error')).toBe(true);
    expect((await other.cookies()).map((c) => c.name)).not.toContain('troupe_dashboard');
    const res = await other.request.get(new URL('/api/jobs', dashboard.url).href);
    expect(res.status()).toBe(401);
    await p.screenshot({ path: path.join(SHOTS, 'login-refused.png') });
  } finally {
    await other.close();
  }
});

test('log in; a running job advances live; a dropped stream resumes with no lost event', async () => {
  await logIn(page, cluster.token);
  await page.waitForURL((u) => !u.pathname.startsWith('/login'));
  const cookie = (await context.cookies()).find((c) => c.name === 'troupe_dashboard');
  expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
  expect(page.url()).not.toContain(cluster.token);

  const spec = [
    'name: dashboard-progress',
    'kind: shell-tasks',
    'concurrency: 2',
    'tasks: {count: 10, command: "sleep 2; echo task {i}", idPrefix: t}',
  ].join('\n');
  const job = await client.submitJob(spec);
  await page.waitForSelector(`tr[data-job="${job.jobId}"]`, { timeout: 60_000 });
  await shot('jobs');

  const eventRequests: string[] = [];
  page.on('request', (r) => {
    if (r.url().includes('/events')) eventRequests.push(r.url());
  });
  await page.goto(`${dashboard.url}#/job/${job.jobId}`);
  await page.waitForSelector('#job-done', { timeout: 60_000 });
  const doneOf = async () => Number((await page.textContent('#job-done'))?.split(' / ')[0] ?? 0);
  const first = await doneOf();
  expect(first).toBeLessThan(10);
  // Progress advances on the page without a reload.
  await waitFor(async () => (await doneOf()) > first, { intervalMs: 250, timeoutMs: 180_000 });
  // Mid-job, the server drops every event stream; EventSource reconnects with Last-Event-ID.
  await waitFor(
    async () =>
      (await page.evaluate(
        () => (globalThis as unknown as TroupeWindow).troupe.eventSeqs.length,
      )) >= 4,
    { intervalMs: 250, timeoutMs: 120_000 },
  );
  // A stream may be between reconnects on a loaded machine: drop the next one that is open.
  await waitFor(() => dashboard.dropStreams() >= 1, { intervalMs: 50, timeoutMs: 60_000 });
  await waitFor(async () => (await doneOf()) === 10, { intervalMs: 250, timeoutMs: 300_000 });
  await waitFor(
    async () =>
      page.evaluate(() => (globalThis as unknown as TroupeWindow).troupe.streamEnded === true),
    {
      timeoutMs: 120_000,
    },
  );
  const lastSeq = await finish(job.jobId);
  const seqs: number[] = await page.evaluate(
    () => (globalThis as unknown as TroupeWindow).troupe.eventSeqs,
  );
  expect(seqs).toEqual(Array.from({ length: lastSeq }, (_, i) => i + 1));
  expect(eventRequests.length).toBeGreaterThanOrEqual(2);
  await page.waitForSelector('.vrow[data-task="t9"]', { timeout: 30_000 });
  await shot('job');

  // Filter and search run on the server.
  await page.fill('#task-search', 't3');
  await waitFor(
    async () => (await page.textContent('#task-matched'))?.startsWith('1 of 10') ?? false,
    {
      timeoutMs: 30_000,
    },
  );

  await page.goto(`${dashboard.url}#/task/${job.jobId}/t3`);
  await page.waitForSelector('#task-status');
  expect(await page.textContent('#task-status')).toContain('TASK_PASSED');
  expect(await page.textContent('main')).toContain('task 3');
});

test("an agent task's trajectory: messages, tool calls and results, cost per step", async () => {
  const job = await client.submitJob(
    JSON.stringify({
      name: 'dashboard-bugfix',
      kind: 'issue-resolution',
      concurrency: 1,
      budget: { usd: 5 },
      agent: { model: 'fake', maxSteps: 10 },
      config: { agent: { kind: 'model' } },
      tasks: { suite: SUITE, include: ['py-lru-cache'] },
    }),
    { format: 'json' },
  );
  await finish(job.jobId);
  await page.goto(`${dashboard.url}#/job/${job.jobId}`);
  await page.waitForSelector('.vrow[data-task="py-lru-cache"]', { timeout: 60_000 });
  await shot('job-bugfix');
  await page.click('.vrow[data-task="py-lru-cache"] a');
  await page.waitForSelector('[data-step="model_call"]', { timeout: 60_000 });
  expect(await page.textContent('#task-status')).toContain('TASK_PASSED');
  expect(await page.locator('[data-step="tool_call"]').count()).toBeGreaterThanOrEqual(2);
  expect(await page.locator('[data-step="tool_result"]').count()).toBeGreaterThanOrEqual(2);
  const trajectory = (await page.textContent('#trajectory')) ?? '';
  expect(trajectory).toContain('write_file');
  expect(trajectory).toMatch(/\$0\.0020/); // 1000 × $1/M + 100 × $10/M per model call
  await shot('task-trajectory');

  await page.goto(`${dashboard.url}#/budget`);
  await page.waitForSelector(`#budget td >> text=job:${job.jobId}`);
  await shot('budget');
});

test("a model call's reservation while it is held: GetBudget, WatchBudget and the budget page by push", async () => {
  // The first model call of the job blocks in the fake provider until the test lets it go: its
  // reservation is held in the ledger meanwhile, deterministically (no timing involved).
  await ensureLoggedIn();
  let entered = false;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  fake.setHandler(async (req) => {
    if (!entered) {
      entered = true;
      await gate;
    }
    return reply(req.body);
  });
  // Every request of the budget API the page makes (the old page polled it every 1.5 s).
  const polled: string[] = [];
  const streams: string[] = [];
  const onRequest = (r: { url: () => string }) => {
    const p = new URL(r.url()).pathname;
    if (p === '/api/budget') polled.push(p);
    if (p.startsWith('/api/stream/')) streams.push(p);
  };
  page.on('request', onRequest);
  // The budget as a WatchBudget consumer holds it: open reservations and closed ones.
  const watch = new AbortController();
  const opened = new Map<string, { scope: string; usd: number }>();
  const closed: string[] = [];
  const watching = (async () => {
    for await (const u of client.watchBudget('', { signal: watch.signal })) {
      if (u.snapshot) opened.clear();
      for (const r of u.opened) opened.set(`${r.ledger} ${r.id}`, r);
      for (const r of u.closed) {
        opened.delete(`${r.ledger} ${r.id}`);
        closed.push(`${r.ledger} ${r.id}`);
      }
    }
  })();
  try {
    // The page is open before the job starts: the reservation has to come to it by push. (An
    // earlier test may have left the page on the budget page: leave it, so that it opens anew.)
    await page.goto(`${dashboard.url}#/`);
    const snapshots = await listCount(page, 'listSnapshots', 'budget');
    await page.goto(`${dashboard.url}#/budget`);
    await waitFor(async () => (await listCount(page, 'listSnapshots', 'budget')) > snapshots, {
      timeoutMs: 30_000,
      message: 'the budget snapshot',
    });
    const job = await client.submitJob(
      JSON.stringify({
        name: 'dashboard-budget',
        kind: 'issue-resolution',
        concurrency: 1,
        budget: { usd: 5 },
        agent: { model: 'fake', maxSteps: 10 },
        config: { agent: { kind: 'model' } },
        tasks: { suite: SUITE, include: ['py-lru-cache'] },
      }),
      { format: 'json' },
    );
    const scope = `job:${job.jobId}`;
    const before = (await client.getBudget('cluster')).scopes[0]!;
    const ofJob = (r: { scope: string }) =>
      r.scope === scope || r.scope.startsWith(`agent:${job.jobId}/`);
    await waitFor(() => entered, { intervalMs: 100, timeoutMs: 300_000 });
    const held = await waitFor(
      async () => {
        const b = await client.getBudget();
        return b.reservations.find(ofJob);
      },
      { intervalMs: 200, timeoutMs: 60_000 },
    );
    expect(held.usd).toBeGreaterThan(0);
    expect(held.holder).not.toBe('');
    expect(held.ledger).toBe('cluster');
    expect(held.expiresUnixMs).toBeGreaterThan(Date.now());
    // One scope alone: the job's, with the held amount counted in its reserved totals.
    const one = await client.getBudget(scope);
    expect(one.scopes.map((s) => s.scope)).toEqual([scope]);
    expect(one.scopes[0]!.reserved!.usd).toBeGreaterThanOrEqual(held.usd);
    expect(one.scopes[0]!.limit!.usd).toBe(5);
    expect(one.reservations.map((r) => r.id)).toContain(held.id);
    await expect(client.getBudget('job:no-such-job')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(client.getBudget('not a scope')).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const key = `cluster ${held.id}`;
    await waitFor(() => opened.get(key), {
      timeoutMs: 30_000,
      message: 'the reservation opened in WatchBudget',
    });
    expect(opened.get(key)!.scope).toBe(held.scope);

    await page.waitForSelector(`#reservations tr[data-reservation="${held.id}"]`, {
      timeout: 30_000,
    });
    expect(await page.textContent(`tr[data-reservation="${held.id}"]`)).toContain(held.scope);
    await shot('budget-reservation');

    release();
    // Settled: the reservation leaves the ledger, the watch and the page, and the call is
    // charged (in the cluster scope, which keeps a finished job's spending once its scope is
    // folded away).
    await page.waitForSelector(`#reservations tr[data-reservation="${held.id}"]`, {
      state: 'detached',
      timeout: 120_000,
    });
    await waitFor(() => closed.includes(key), {
      timeoutMs: 60_000,
      message: 'the reservation closed in WatchBudget',
    });
    await finish(job.jobId);
    await waitFor(async () => !(await client.getBudget()).reservations.some(ofJob), {
      intervalMs: 200,
      timeoutMs: 60_000,
    });
    const after = (await client.getBudget('cluster')).scopes[0]!;
    expect(after.spent!.calls).toBeGreaterThan(before.spent!.calls);
    expect(after.spent!.usd).toBeGreaterThan(before.spent!.usd);
    // The finished job's scope is folded away: the page shows it closed, without a reload.
    await page.waitForSelector(`#budget tr[data-scope="${scope}"][data-closed]`, {
      timeout: 60_000,
    });
    // A search's scope (what the evolve driver opens for `maxCostUsd`, in the job's own ledger)
    // appears under its job's row.
    const search = await openSearchBudgetScope(cluster.coordinator.system, job.jobId, 's1', 2);
    const searchRow = `#budget tr[data-scope="${search}"][data-ledger="${scope}"]`;
    await page.waitForSelector(searchRow, { timeout: 30_000 });
    expect(await page.textContent(searchRow)).toContain('dashboard-budget');
    const rows = await page.locator('#budget-body tr').all();
    const order = await Promise.all(rows.map((r) => r.getAttribute('data-scope')));
    expect(order.indexOf(search)).toBe(order.indexOf(scope) + 1);
    await shot('budget-search-scope');
    expect(await listCount(page, 'listSnapshots', 'budget')).toBe(snapshots + 1);
    expect(polled).toEqual([]);
    expect(streams).toContain('/api/stream/budget');
  } finally {
    release();
    watch.abort();
    await watching.catch(() => undefined);
    page.off('request', onRequest);
    fake.setHandler((req) => reply(req.body));
  }
});

test("an evolve job's fitness curves per island, lineage and diffs", async () => {
  const job = await client.submitJob(
    JSON.stringify({
      name: 'dashboard-evolve',
      kind: 'evolve',
      concurrency: 1,
      taskTimeoutMs: 400_000,
      retries: { max: 0 },
      config: { evaluatorSlots: 2 },
      tasks: [
        {
          id: 'or3',
          suite: OR3,
          limits: { maxEvaluations: 10, maxGenerations: 3 },
          search: { islands: 2, draftsPerIsland: 1, childrenPerGeneration: 3, seed: 1 },
        },
      ],
    }),
    { format: 'json' },
  );
  // Opened while the search runs: the curves grow from the per-generation progress events
  // before the task ends, then the page switches to the artifacts (lineage, diffs).
  await ensureLoggedIn();
  await waitFor(
    async () => (await client.getResults(job.jobId)).tasks.some((t) => t.taskId === 'or3'),
    { intervalMs: 200, timeoutMs: 60_000 },
  );
  await page.goto(`${dashboard.url}#/evolve/${job.jobId}/or3`);
  await page.waitForSelector('#evolve-live', { timeout: 60_000 });
  const liveState = () =>
    page.evaluate(
      () =>
        (globalThis as unknown as { troupe: { evolveLive?: EvolveLive } }).troupe.evolveLive ?? {
          points: 0,
          history: [],
          finished: false,
        },
    );
  await waitFor(async () => (await liveState()).points >= 1, {
    intervalMs: 250,
    timeoutMs: 400_000,
  });
  await waitFor(async () => ((s) => s.points >= 2 || s.finished)(await liveState()), {
    intervalMs: 250,
    timeoutMs: 400_000,
  });
  if (!(await liveState()).finished) await shot('evolve-live');
  await finish(job.jobId);
  await waitFor(async () => (await liveState()).finished, { intervalMs: 250, timeoutMs: 60_000 });
  const { history } = await liveState();
  // Every draw happened before the task ended (the live page stops drawing then), and the point
  // count grew across draws: first one point or more, later more points.
  expect(history[0]).toBeGreaterThanOrEqual(1);
  expect(Math.max(...history)).toBeGreaterThan(history[0]!);
  expect([...history].sort((a, b) => a - b)).toEqual(history);
  await page.waitForSelector('#fitness-chart', { timeout: 60_000 });
  await page.waitForSelector('#lineage', { timeout: 60_000 });
  await page.goto(`${dashboard.url}#/task/${job.jobId}/or3`);
  await page.click('#evolve-link');
  await page.waitForSelector('#lineage', { timeout: 60_000 });
  expect(await page.locator('#fitness-chart polyline[data-series$="-best"]').count()).toBe(2);
  expect(await page.locator('#fitness-chart polyline[data-series$="-mean"]').count()).toBe(2);
  expect(await page.locator('#lineage tbody tr').count()).toBeGreaterThanOrEqual(1);
  await shot('evolve');

  await page.goto(`${dashboard.url}#/nodes`);
  await page.waitForSelector('#nodes-body tr[data-host]', { timeout: 30_000 });
  await shot('nodes');
});

test('the jobs list and the nodes page update by push, with no polling', async () => {
  await ensureLoggedIn();
  // Every request of the list APIs the page makes from here on (the old pages polled them).
  const polled: string[] = [];
  const streams: string[] = [];
  const onRequest = (r: { url: () => string }) => {
    const p = new URL(r.url()).pathname;
    if (p === '/api/jobs' || p === '/api/nodes') polled.push(p);
    if (p.startsWith('/api/stream/')) streams.push(p);
  };
  page.on('request', onRequest);
  try {
    await page.goto(`${dashboard.url}#/`);
    await waitFor(async () => (await listCount(page, 'listSnapshots', 'jobs')) >= 1, {
      timeoutMs: 30_000,
      message: 'the jobs list snapshot',
    });
    const job = await client.submitJob(
      [
        'name: dashboard-push',
        'kind: shell-tasks',
        'concurrency: 1',
        'tasks: {count: 3, command: "sleep 1; echo task {i}", idPrefix: p}',
      ].join('\n'),
    );
    const row = `tr[data-job="${job.jobId}"]`;
    await page.waitForSelector(row, { timeout: 60_000 });
    await page.waitForSelector(`${row} td.state-SUCCEEDED`, { timeout: 120_000 });
    expect(await page.textContent(`${row} td.done`)).toBe('3 / 3');
    expect(await listCount(page, 'listUpdates', 'jobs')).toBeGreaterThanOrEqual(3);

    // A dropped stream: EventSource reconnects and the list starts again from a fresh snapshot.
    const snapshots = await listCount(page, 'listSnapshots', 'jobs');
    await waitFor(() => dashboard.dropStreams() >= 1, { intervalMs: 50, timeoutMs: 30_000 });
    await waitFor(async () => (await listCount(page, 'listSnapshots', 'jobs')) > snapshots, {
      timeoutMs: 30_000,
      message: 'a new snapshot after the reconnect',
    });
    await page.waitForSelector(`${row} td.state-SUCCEEDED`, { timeout: 30_000 });

    // The nodes page: a drain shows up without a reload.
    await page.goto(`${dashboard.url}#/nodes`);
    const host = await page.waitForSelector('#nodes-body tr[data-host]', { timeout: 30_000 });
    const hostId = (await host.getAttribute('data-host'))!;
    expect(await page.textContent(`tr[data-host="${hostId}"]`)).toContain('READY');
    await client.drainNode(hostId, 'dashboard push test');
    await waitFor(
      async () =>
        (await page.textContent(`tr[data-host="${hostId}"]`))?.includes('DRAINING') ?? false,
      { timeoutMs: 30_000, message: 'the drained node on the nodes page' },
    );
    await shot('nodes-draining');
    expect(polled).toEqual([]);
    expect(streams).toEqual(expect.arrayContaining(['/api/stream/jobs', '/api/stream/nodes']));
  } finally {
    page.off('request', onRequest);
  }
});
