import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';

// The dashboard served by the deployable processes (the built CLI, dist/): `troupe coordinator
// --dashboard-port` and `troupe dashboard` against that coordinator's job API. Login over plain
// HTTP with the token (a form post answered by a session cookie), a wrong token refused, the API
// answering with a session and 401 without one.

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');

interface Proc {
  child: ChildProcess;
  output: () => string;
}

const procs: Proc[] = [];
function start(args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const p = { child, output: () => out };
  procs.push(p);
  return p;
}

let server: NatsServerHandle;
let dir: string;
const token = randomBytes(24).toString('hex');

beforeAll(async () => {
  server = await startNatsServer();
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-dashboard-cmd-'));
  writeFileSync(path.join(dir, 'token'), `${token}\n`, { mode: 0o600 });
});
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await server?.stop();
});

/** Logs in with `secret`; returns the session cookie, or undefined when refused. */
async function logIn(url: string, secret: string): Promise<string | undefined> {
  const res = await fetch(new URL('/login', url), {
    method: 'POST',
    body: new URLSearchParams({ token: secret }),
    redirect: 'manual',
  });
  expect(res.status).toBe(303);
  const cookie = res.headers.get('set-cookie');
  if (!cookie) {
    expect(res.headers.get('location')).toBe('/login?error=1');
    return undefined;
  }
  expect(res.headers.get('location')).toBe('/');
  expect(cookie).not.toContain(token);
  return cookie.split(';')[0];
}

async function checkDashboard(url: string): Promise<void> {
  expect(await logIn(url, 'w'.repeat(48))).toBeUndefined();
  expect((await fetch(new URL('/api/jobs', url))).status).toBe(401);
  const cookie = await logIn(url, token);
  expect(cookie).toBeDefined();
  const jobs = await fetch(new URL('/api/jobs', url), { headers: { cookie: cookie! } });
  expect(jobs.status).toBe(200);
  expect(await jobs.json()).toMatchObject({ jobs: [] });
  const nodes = await fetch(new URL('/api/nodes', url), { headers: { cookie: cookie! } });
  expect(nodes.status).toBe(200);
  const page = await fetch(url, { headers: { cookie: cookie! } });
  expect(await page.text()).toContain('<script src="/assets/app.js">');
  const asset = await fetch(new URL('/assets/app.js', url));
  expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
}

test('troupe coordinator --dashboard-port and troupe dashboard serve the dashboard', async () => {
  const ready = path.join(dir, 'coordinator.ready');
  const coordinator = start(['coordinator', '--ready-file', ready, '--dashboard-port', '0'], {
    TROUPE_CLUSTER: randomClusterName(),
    TROUPE_NATS_URL: server.url,
    TROUPE_GRPC_HOST: '127.0.0.1',
    TROUPE_GRPC_PORT: '0',
    TROUPE_GRPC_TOKEN_FILE: path.join(dir, 'token'),
    TROUPE_METRICS_PORT: 'off',
    TROUPE_SHUTDOWN_GRACE_MS: '1000',
  });
  await waitFor(() => existsSync(ready), { timeoutMs: 60_000, message: 'coordinator ready' }).catch(
    (err: Error) => {
      throw new Error(`${err.message}\n${coordinator.output()}`);
    },
  );
  const logged = await waitFor(
    () =>
      /"url":"(http:\/\/127\.0\.0\.1:\d+\/)","msg":"coordinator serving the web dashboard"/.exec(
        coordinator.output(),
      ),
    { timeoutMs: 30_000, message: 'dashboard URL logged' },
  );
  await checkDashboard(logged[1]!);

  const { grpcPort } = JSON.parse(readFileSync(ready, 'utf8')) as { grpcPort: number };
  const dashboard = start(
    [
      '--address',
      `127.0.0.1:${grpcPort}`,
      '--token-file',
      path.join(dir, 'token'),
      'dashboard',
      '--port',
      '0',
    ],
    {},
  );
  const printed = await waitFor(
    () => /Troupe dashboard on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(dashboard.output()),
    { timeoutMs: 30_000, message: 'troupe dashboard URL printed' },
  );
  expect(dashboard.output()).toContain('read-only');
  await checkDashboard(printed[1]!);
  dashboard.child.kill('SIGINT');
  coordinator.child.kill('SIGTERM');
});
