import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { applyEnvironment, NodeAgent, type NodeAgentOptions } from '@troupe/node-agent';
import { ensureDocker, startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { parseAllDocuments } from 'yaml';
import { runShellJobUnderUsers } from './support/run-job-under-users';

// The Kubernetes deployment's NATS configuration on a real nats-server: the ConfigMap's nats.conf
// (the dev overlay's single server) and nats-roles.conf, with the users file that
// `deploy/k8s/gen-secrets.sh --nodes` generates, laid out as the NATS pods mount them
// (/etc/nats/config, /etc/nats/users). Each node agent is configured as components/per-node-nats
// configures the DaemonSet: TROUPE_NODE_NAME, the user `node-agent.<node>` and the node's
// password from a file on the node (TROUPE_NATS_PASS_FILE).

const K8S = path.resolve(__dirname, '../../k8s');
const CLUSTER = 'troupe';
const T = `troupe.${CLUSTER}`;
const NODE_A = 'ip-10-0-1-2.ec2.internal'; // an EKS node name: dots, which a host id cannot hold
const NODE_B = 'node-b';

let server: NatsServerHandle;
let dir: string;
const conns: NatsConnection[] = [];

/** The `data` of ConfigMap file `file` of deploy/k8s. */
function configMapData(file: string): Record<string, string> {
  const [doc] = parseAllDocuments(readFileSync(path.join(K8S, file), 'utf8'));
  return (doc!.toJS() as { data: Record<string, string> }).data;
}

/** The node agent's environment on `node`, as the DaemonSet with the component sets it. */
function nodeEnv(node: string): Record<string, string> {
  return {
    TROUPE_CLUSTER: CLUSTER,
    TROUPE_NATS_URL: server.url,
    TROUPE_NODE_NAME: node,
    TROUPE_NATS_USER: `node-agent.${node}`, // 'node-agent.$(TROUPE_NODE_NAME)', expanded
    TROUPE_NATS_PASS_FILE: path.join(dir, 'node-credentials', node, 'nats-password'),
  };
}

function nodeAgentOptions(env: Record<string, string>): NodeAgentOptions {
  const { config, issues } = applyEnvironment({}, env);
  expect(issues).toEqual([]);
  return { ...(config as NodeAgentOptions), shutdownGraceMs: 0 };
}

function secretsEnv(): Record<string, string> {
  return Object.fromEntries(
    readFileSync(path.join(dir, 'base/secrets.env'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-k8s-users-'));
  cpSync(K8S, dir, { recursive: true });
  rmSync(path.join(dir, 'node-credentials'), { recursive: true, force: true });
  execFileSync('bash', [
    path.join(dir, 'gen-secrets.sh'),
    '--force',
    '--nodes',
    `${NODE_A},${NODE_B}`,
  ]);
  const etc = path.join(dir, 'etc-nats');
  mkdirSync(path.join(etc, 'config'), { recursive: true });
  mkdirSync(path.join(etc, 'users'));
  const base = configMapData('base/nats-config.yaml');
  const dev = configMapData('overlays/dev/nats-config.yaml');
  writeFileSync(path.join(etc, 'config', 'nats-roles.conf'), base['nats-roles.conf']!);
  writeFileSync(
    path.join(etc, 'config', 'nats.conf'),
    dev['nats.conf']!.replace('$POD_NAME', 'troupe-nats-0').replace(
      'store_dir: /data',
      `store_dir: ${JSON.stringify(path.join(dir, 'js'))}`,
    ),
  );
  cpSync(path.join(dir, 'base/nats-users.conf'), path.join(etc, 'users', 'nats-users.conf'));
  server = await startNatsServer({
    jetstream: false,
    args: ['-c', path.join(etc, 'config', 'nats.conf')],
  });
});
afterAll(async () => {
  for (const nc of conns) await nc.close().catch(() => undefined);
  await server?.stop();
});

test('the generated users file is what the ConfigMap includes, and nothing else gets in', async () => {
  const pass = (node: string) =>
    readFileSync(path.join(dir, 'node-credentials', node, 'nats-password'), 'utf8').trim();
  const a = await connect({
    servers: server.url,
    user: `node-agent.${NODE_A}`,
    pass: pass(NODE_A),
  });
  conns.push(a);
  // No shared node agent user, and one node's password is not another's.
  await expect(
    connect({ servers: server.url, user: 'node-agent', pass: pass(NODE_A) }),
  ).rejects.toThrow(/Authorization/i);
  await expect(
    connect({ servers: server.url, user: `node-agent.${NODE_B}`, pass: pass(NODE_A) }),
  ).rejects.toThrow(/Authorization/i);
  // Its own host's control subjects (the host id made of the node name), not another's.
  const own = a.subscribe(`${T}.host.ip-10-0-1-2-ec2-internal.ping`, { max: 1 });
  await a.flush();
  const coord = await connect({
    servers: server.url,
    user: 'coordinator',
    pass: secretsEnv()['nats-coordinator-password']!,
  });
  conns.push(coord);
  coord.publish(`${T}.host.ip-10-0-1-2-ec2-internal.ping`, 'hello');
  await coord.flush();
  const received: string[] = [];
  for await (const m of own) received.push(m.string());
  expect(received).toEqual(['hello']);
  const errors: string[] = [];
  const b = await connect({
    servers: server.url,
    user: `node-agent.${NODE_A}`,
    pass: pass(NODE_A),
  });
  conns.push(b);
  void (async () => {
    for await (const s of b.status()) if (s.type === 'error') errors.push(String(s.error));
  })();
  b.subscribe(`${T}.host.${NODE_B}.activate`);
  await b.flush().catch(() => undefined);
  await waitFor(() => errors.some((e) => /Permissions Violation for Subscription/i.test(e)), {
    timeoutMs: 10_000,
    message: "the server refusing node A's subscription to node B's host subjects",
  });
});

test('node agents configured as the DaemonSet runs them register and run a job', async () => {
  const statuses = await runShellJobUnderUsers({
    cluster: CLUSTER,
    coordinatorNats: {
      servers: server.url,
      user: 'coordinator',
      pass: secretsEnv()['nats-coordinator-password']!,
    },
    agents: [NODE_A, NODE_B].map((node) => nodeAgentOptions(nodeEnv(node))),
    tasks: { a: 'echo ok', b: 'echo ok', c: 'exit 1' },
  });
  expect(statuses).toEqual({ a: 'TASK_PASSED', b: 'TASK_PASSED', c: 'TASK_FAILED' });
});

test("a node agent with one node's password cannot start as another node", async () => {
  await ensureDocker();
  // Node A's user and password file, node B's name: the server refuses B's control subjects.
  const env = { ...nodeEnv(NODE_A), TROUPE_NODE_NAME: NODE_B };
  await expect(NodeAgent.start(nodeAgentOptions(env))).rejects.toThrow(
    new RegExp(`may not subscribe to ${T}\\.host\\.${NODE_B}\\.`),
  );
});
