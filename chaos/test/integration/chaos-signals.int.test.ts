import { readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnNodeProcess, type TestProcess } from '@troupe/test-cluster';
import { ensureDocker, waitFor } from '@troupe/testkit';

// `npm run chaos` stopped by a signal in the middle of a schedule: a first SIGTERM is taken, like
// a first Ctrl-C, as a request to finish the schedule; a second quits at once, and not one of the
// cluster's processes (nats-servers, coordinators, node agents) outlives the harness. Before, a
// SIGTERM killed the harness alone and left all eight running.

jest.setTimeout(300_000);

const REPO = path.resolve(__dirname, '..', '..', '..');

/** A process as /proc knows it; its start time tells it apart from a later one with its pid. */
interface ProcessEntry {
  readonly pid: number;
  readonly ppid: number;
  readonly state: string;
  readonly startTicks: string;
  readonly command: string;
}

function readProcess(pid: number): ProcessEntry | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After `pid (comm) `: state, ppid, ... starttime is the 20th field.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    return {
      pid,
      ppid: Number(fields[1]),
      state: fields[0] ?? '?',
      startTicks: fields[19] ?? '?',
      command,
    };
  } catch {
    return undefined; // gone
  }
}

/** Every live process below `pid`. */
function descendantsOf(pid: number): ProcessEntry[] {
  const all = readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .flatMap((e) => readProcess(Number(e)) ?? []);
  const found: ProcessEntry[] = [];
  for (let parents = new Set([pid]); parents.size > 0;) {
    const children = all.filter((p) => parents.has(p.ppid) && p.state !== 'Z');
    found.push(...children);
    parents = new Set(children.map((c) => c.pid));
  }
  return found;
}

/** Whether `p` still runs (a zombie has ended; a new process on its pid is another). */
function stillRuns(p: ProcessEntry): boolean {
  const now = readProcess(p.pid);
  return now !== undefined && now.startTicks === p.startTicks && now.state !== 'Z';
}

/** The JetStream store (`-sd`) of a nats-server the testkit started: a `troupe-nats-` temp dir. */
function natsStore(p: ProcessEntry): string | undefined {
  const store = /(?:^| )-sd (\S+)/.exec(p.command)?.[1];
  return store && path.basename(path.dirname(store)).startsWith('troupe-nats-') ? store : undefined;
}

/**
 * Live processes of `cluster` wherever they came from (a member restarted after a fault has a
 * new pid): coordinators and node agents by their environment, nats-servers by their stores.
 */
function clusterProcesses(cluster: string, stores: readonly string[]): ProcessEntry[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e) && Number(e) !== process.pid)
    .flatMap((e) => {
      const p = readProcess(Number(e));
      if (p === undefined || p.state === 'Z') return [];
      if (stores.some((s) => p.command.includes(` -sd ${s}`))) return [p];
      try {
        const environ = readFileSync(`/proc/${e}/environ`, 'utf8').split('\0');
        return environ.includes(`TROUPE_CLUSTER=${cluster}`) ? [p] : [];
      } catch {
        return [];
      }
    });
}

let harness: TestProcess | undefined;
let cluster: string | undefined;
let stores: string[] = [];

afterAll(async () => {
  // Whatever the outcome, leave nothing behind: the harness, its processes, their files and the
  // sandboxes the node agents made.
  if (harness && harness.child.exitCode === null && harness.child.signalCode === null) {
    await harness.kill('SIGKILL');
  }
  if (cluster === undefined) return;
  for (const p of clusterProcesses(cluster, stores)) process.kill(p.pid, 'SIGKILL');
  for (const s of stores) rmSync(path.dirname(s), { recursive: true, force: true });
  for (const f of readdirSync(os.tmpdir())) {
    if (f.startsWith(`troupe-chaos-${cluster}-`))
      rmSync(path.join(os.tmpdir(), f), { force: true });
  }
  const docker = await ensureDocker();
  const label = { label: [`troupe.cluster=${cluster}`] };
  for (const c of await docker.listContainers({ all: true, filters: label })) {
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
  }
  for (const v of (await docker.listVolumes({ filters: label })).Volumes ?? []) {
    await docker
      .getVolume(v.Name)
      .remove()
      .catch(() => undefined);
  }
});

test('a second SIGTERM mid-schedule kills every process of the cluster, then exits', async () => {
  const h = spawnNodeProcess(
    path.join(REPO, 'chaos', 'src', 'main.ts'),
    ['--profile', 'short', '--schedules', '1', '--seed', '20260423'],
    // As scripts/chaos runs it (`node -r ./chaos/register.js`): the harness runs from source.
    { env: { NODE_OPTIONS: `--require=${path.join(REPO, 'chaos', 'register.js')}` } },
  );
  harness = h;
  const starting = await h.waitForLine((l) => l.includes('JetStream cluster for '), 60_000);
  cluster = /JetStream cluster for (\S+)/.exec(starting)?.[1];
  expect(cluster).toBeDefined();
  // Up, and no fault injected yet: every member runs.
  await h.waitForLine((l) => l.includes('cluster up:'), 240_000);
  const started = descendantsOf(h.child.pid!);
  stores = started.flatMap((p) => natsStore(p) ?? []);
  expect(stores).toHaveLength(3);
  expect(started.filter((p) => / coordinator /.test(p.command))).toHaveLength(2);
  expect(started.filter((p) => / node-agent$/.test(p.command))).toHaveLength(3);
  expect(clusterProcesses(cluster!, stores).length).toBeGreaterThanOrEqual(8);

  await h.waitForLine((l) => l.includes('schedule 1/1 seed'), 60_000);
  h.child.kill('SIGTERM');
  // Before, the harness died of this first SIGTERM and left all eight running.
  await h.waitForLine((l) => l.includes('interrupted (SIGTERM)'), 10_000);
  h.child.kill('SIGTERM');
  expect(await h.exited).toBe(143);
  await waitFor(() => clusterProcesses(cluster!, stores).length === 0, {
    timeoutMs: 10_000,
    message: 'no process of the cluster left once the harness exited',
  });
  expect(started.filter(stillRuns)).toEqual([]);
});
