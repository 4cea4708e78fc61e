import { spawn } from 'node:child_process';
import path from 'node:path';
import { createKv, StateStore } from '@troupe/actors';
import { kvBucketName, noopLogger } from '@troupe/proto';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type Docker from 'dockerode';
import { TroupeLabel } from '@troupe/node-agent';
import { type OrphanCommandEnd, orphanCommandReader } from '../../src/internal/orphan-commands';
import { dockerFixture, type DockerFixture } from './helpers';

// A node agent killed just as it starts a command leaves an exec that runs to its end, but
// Docker's inspect then reports exit code 126 (its attach failed), while the exec's `exec_die`
// event has the real code. Read as 126, the end was "not its own verdict" and the task ran the
// finished command again (chaos seeds 7023, 8010, 8025, 9029). The restarted agent's reader must
// take the code from the event.

jest.setTimeout(120_000);

const REPO = path.resolve(__dirname, '../../..');

let server: NatsServerHandle;
let nc: NatsConnection;
let fx: DockerFixture;
const containers: Docker.Container[] = [];

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  fx = await dockerFixture();
});

afterAll(async () => {
  for (const c of containers) await c.remove({ force: true }).catch(() => undefined);
  await nc?.close();
  await server?.stop();
});

/** Starts `execId` attached from a process that is killed the moment the start returns. */
async function startFromDoomedClient(execId: string): Promise<void> {
  const script =
    "const D = require('dockerode');" +
    `new D().getExec(${JSON.stringify(execId)}).start({ hijack: true, stdin: false })` +
    ".then(() => process.kill(process.pid, 'SIGKILL'));";
  const child = spawn(process.execPath, ['-e', script], { cwd: REPO, stdio: 'ignore' });
  const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('exit', (_code, sig) => resolve(sig)),
  );
  expect(signal).toBe('SIGKILL');
}

test('the exit code of a command whose agent died as it started it comes from its event', async () => {
  const id = `orphan-${Date.now().toString(36)}`;
  const actor = `sandbox/${id}`;
  const container = await fx.docker.createContainer({
    Image: fx.busybox,
    Cmd: ['sleep', '600'],
    Labels: { [TroupeLabel.ACTOR]: actor },
    HostConfig: { NetworkMode: 'none' },
  });
  containers.push(container);
  await container.start();
  const exec = await container.exec({
    Cmd: ['sh', '-c', 'echo finished && sleep 1'],
    AttachStdout: true,
    AttachStderr: true,
  });
  // What the sandbox actor records before it starts a command: its handle.
  const states = new StateStore(await createKv(nc, kvBucketName(fx.cluster, 'state')), nc);
  const startedAtMs = Date.now();
  await states.commit({ kind: 'sandbox', id }, 0, {
    epoch: 1,
    cursor: 0,
    data: {
      status: 'ready',
      createdAtMs: startedAtMs,
      commands: [{ taskId: 'task-1', startedAtMs, handle: exec.id }],
    },
  });

  await startFromDoomedClient(exec.id);
  const info = await waitFor(
    async () => {
      const i = await exec.inspect();
      return !i.Running && typeof i.ExitCode === 'number' ? i : undefined;
    },
    { timeoutMs: 30_000, message: 'the command to end' },
  );
  // The daemon's answer this test is about (docker.io 20.10): the command ran to its end.
  expect(info.ExitCode).toBe(126);

  const ends: OrphanCommandEnd[] = [];
  const read = orphanCommandReader(nc, fx.cluster, fx.docker, (e) => ends.push(e), noopLogger);
  await read({ id: container.id, labels: { [TroupeLabel.ACTOR]: actor } });
  expect(ends).toEqual([
    { actor: { kind: 'sandbox', id }, taskId: 'task-1', handle: exec.id, exitCode: 0 },
  ]);
});
