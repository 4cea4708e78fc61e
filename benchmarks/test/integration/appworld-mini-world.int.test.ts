import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  DockerSandboxBackend,
  ImageManager,
  managedLabelFilters,
  type Sandbox,
} from '@troupe/node-agent';
import { TestCluster } from '@troupe/test-cluster';
import { parse as parseYaml } from 'yaml';

// The appworld-mini world in the sandbox the skill-sequence driver uses: the builtin python-slim
// image, uid 1000, read-only root, no network. selftest.py seeds a world per task, runs the gold
// solution through the REPL protocol and grades it (must pass), grades an untouched world and a
// completed-but-idle one (must fail), and exercises check_skill, bad requests and timeouts.

jest.setTimeout(900_000);

const SUITE = path.resolve(__dirname, '../../suites/appworld-mini');
const DEST = '/workspace/appworld-mini';

interface SelftestSummary {
  scenarios: number;
  tasks: number;
  goldPassed: number;
  untouchedFailed: number;
  completedOnlyFailed: number;
  checks: number;
  failedChecks: { name: string; detail: string }[];
}

/** Every file of the suite by relative path (no bytecode caches). */
function suiteFiles(dir = SUITE, rel = ''): Record<string, Uint8Array> {
  const files: Record<string, Uint8Array> = {};
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === '__pycache__') continue;
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) Object.assign(files, suiteFiles(path.join(dir, e.name), r));
    else if (e.isFile()) files[r] = readFileSync(path.join(dir, e.name));
  }
  return files;
}

let tc: TestCluster;
let backend: DockerSandboxBackend;
let sandbox: Sandbox;

beforeAll(async () => {
  tc = await TestCluster.start({ nats: false, docker: true });
  const image = (await new ImageManager({ docker: tc.docker }).ensure('python-slim')).ref;
  backend = new DockerSandboxBackend({ docker: tc.docker });
  sandbox = await backend.create({
    image,
    labels: { cluster: tc.cluster, host: 'appworld-host', actor: 'sandbox/appworld-mini' },
  });
  await sandbox.putFiles(DEST, suiteFiles(), { owner: 'root' });
});

afterAll(async () => {
  await backend?.close();
  const left = await tc.docker.listContainers({
    all: true,
    filters: { label: managedLabelFilters(tc.cluster) },
  });
  await tc.stop();
  expect(left).toEqual([]);
});

test('the sandbox is the driver policy: uid 1000, no network, read-only root', async () => {
  const r = await sandbox.exec([
    'sh',
    '-c',
    'id -u; python3 -c "import sys; print(sys.version_info[:2] >= (3, 11))"; ' +
      'touch /etc/x 2>/dev/null && echo rw || echo ro; ' +
      'python3 -c "import socket; socket.create_connection((\'1.1.1.1\', 53), 2)" 2>/dev/null && echo net || echo nonet',
  ]);
  expect(r.exitCode).toBe(0);
  expect(r.stdout.trim().split('\n')).toEqual(['1000', 'True', 'ro', 'nonet']);
});

test('every gold solution passes, every untouched world fails, the REPL protocol holds', async () => {
  const tasks = parseYaml(readFileSync(path.join(SUITE, 'tasks.yaml'), 'utf8')) as {
    scenarios: { id: string; tasks: { id: string }[] }[];
  };
  const expectedTasks = tasks.scenarios.reduce((n, s) => n + s.tasks.length, 0);
  expect(tasks.scenarios.length).toBeGreaterThanOrEqual(8);
  expect(expectedTasks).toBeGreaterThanOrEqual(24);

  const r = await sandbox.exec(['python3', `${DEST}/selftest.py`], { timeoutMs: 840_000 });
  if (r.exitCode !== 0) process.stderr.write(`selftest stderr:\n${r.stderr.slice(-8000)}\n`);
  const lines = r.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  const summary = JSON.parse(lines[0]!) as SelftestSummary;
  expect(summary.failedChecks).toEqual([]);
  expect(summary).toMatchObject({
    scenarios: tasks.scenarios.length,
    tasks: expectedTasks,
    goldPassed: expectedTasks,
    untouchedFailed: expectedTasks,
    completedOnlyFailed: expectedTasks,
  });
  // Per task: init, gold exec, gold, untouched, idle; plus suite and REPL checks.
  expect(summary.checks).toBeGreaterThan(5 * expectedTasks);
  expect(r.exitCode).toBe(0);
  expect(r.stderr).toMatch(new RegExp(`^${summary.checks} passed, 0 failed$`, 'm'));
});
