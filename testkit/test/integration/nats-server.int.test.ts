import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import {
  makeTempDir,
  MissingBinaryError,
  type NatsServerHandle,
  randomClusterName,
  startNatsServer,
  waitFor,
} from '@troupe/testkit';

const servers: NatsServerHandle[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function start(options?: Parameters<typeof startNatsServer>[0]): Promise<NatsServerHandle> {
  const server = await startNatsServer(options);
  servers.push(server);
  return server;
}

/** True when some file under `dir` contains `needle` (JetStream writes payloads uncompressed). */
async function storeContains(dir: string, needle: string): Promise<boolean> {
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const content = await readFile(path.join(entry.parentPath, entry.name));
    if (content.includes(needle)) return true;
  }
  return false;
}

function portAcceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('startNatsServer', () => {
  it('serves request/reply and JetStream, and stop() removes the temp store', async () => {
    const server = await start();
    expect(server.url).toBe(`nats://127.0.0.1:${server.port}`);
    expect(server.monitorUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.pid).toBeGreaterThan(0);
    expect(server.running).toBe(true);
    const storeDir = server.storeDir!;
    expect(existsSync(storeDir)).toBe(true);

    const nc = await connect({ servers: server.url });
    try {
      const subject = `${randomClusterName()}.echo`;
      const sub = nc.subscribe(subject);
      void (async () => {
        for await (const m of sub) m.respond(`pong:${m.string()}`);
      })();
      const reply = await nc.request(subject, 'ping', { timeout: 2_000 });
      expect(reply.string()).toBe('pong:ping');

      const stream = randomClusterName().replace(/-/g, '_');
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
      const ack = await jetstream(nc).publish(`${stream}.a`, 'hello');
      expect(ack.stream).toBe(stream);
      expect(ack.seq).toBe(1);
    } finally {
      await nc.close();
    }

    await server.stop();
    expect(server.running).toBe(false);
    expect(existsSync(storeDir)).toBe(false);
    expect(await portAcceptsConnections(server.port)).toBe(false);
    await expect(server.stop()).resolves.toBeUndefined();
  });

  it('keeps a stream message across kill() and restart() on the same store and port', async () => {
    const server = await start();
    const stream = randomClusterName().replace(/-/g, '_');
    const payload = `persisted-${randomClusterName()}`;
    let nc = await connect({ servers: server.url });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
      await jetstream(nc).publish(`${stream}.a`, payload);
    } finally {
      await nc.close();
    }
    // The ack can precede the write to the block file; a SIGKILL before the write would lose it.
    await waitFor(() => storeContains(server.storeDir!, payload), {
      timeoutMs: 5_000,
      message: 'message written to the JetStream store',
    });

    const { port, pid } = server;
    await server.kill();
    expect(server.running).toBe(false);
    expect(existsSync(server.storeDir!)).toBe(true);
    expect(await portAcceptsConnections(port)).toBe(false);

    await server.restart();
    expect(server.running).toBe(true);
    expect(server.port).toBe(port);
    expect(server.pid).not.toBe(pid);
    nc = await connect({ servers: server.url });
    try {
      const jsm = await jetstreamManager(nc);
      const msg = await jsm.streams.getMessage(stream, { seq: 1 });
      expect(msg?.string()).toBe(payload);
    } finally {
      await nc.close();
    }
  });

  it('reuses a caller-supplied store and port across servers and never deletes it', async () => {
    const dir = await makeTempDir('troupe-nats-store-');
    try {
      const first = await start({ storeDir: dir.path });
      const stream = randomClusterName().replace(/-/g, '_');
      let nc = await connect({ servers: first.url });
      try {
        await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: [`${stream}.>`] });
        await jetstream(nc).publish(`${stream}.x`, 'kept');
      } finally {
        await nc.close();
      }
      await first.stop();
      expect(existsSync(dir.path)).toBe(true);

      const second = await start({ storeDir: dir.path, port: first.port });
      expect(second.url).toBe(first.url);
      nc = await connect({ servers: second.url });
      try {
        const info = await (await jetstreamManager(nc)).streams.info(stream);
        expect(info.state.messages).toBe(1);
      } finally {
        await nc.close();
      }
      await second.stop();
      expect(existsSync(dir.path)).toBe(true);
    } finally {
      await dir.cleanup();
    }
  });

  it('enforces user/password from the generated config and exposes matching connect options', async () => {
    const server = await start({ user: 'alice', password: 's3cret', jetstream: false });
    expect(server.storeDir).toBeUndefined();
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(
      /authorization/i,
    );
    const nc = await connect(server.connectOptions);
    try {
      expect(server.connectOptions).toEqual({ servers: server.url, user: 'alice', pass: 's3cret' });
      await nc.flush();
    } finally {
      await nc.close();
    }
  });

  it('enforces a token', async () => {
    const server = await start({ token: 'tok-123', jetstream: false });
    await expect(
      connect({ servers: server.url, token: 'wrong', reconnect: false }),
    ).rejects.toThrow(/authorization/i);
    const nc = await connect(server.connectOptions);
    await nc.close();
  });

  it('rejects token combined with user/password, naming the fields', async () => {
    await expect(startNatsServer({ token: 't', user: 'u', password: 'p' })).rejects.toThrow(
      /`token` cannot be combined with `user`\/`password`/,
    );
  });

  it('explains how to install a missing binary', async () => {
    const err = await startNatsServer({ binary: '/nonexistent/nats-server' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MissingBinaryError);
    expect((err as Error).message).toContain('/nonexistent/nats-server');
    expect((err as Error).message).toContain('apt-get install -y nats-server');
    expect((err as Error).message).toContain('scripts/setup');
  });

  it('includes the server output when it fails to start', async () => {
    await expect(startNatsServer({ args: ['--no-such-flag'] })).rejects.toThrow(
      /exited during startup[\s\S]*nats-server output[\s\S]*no-such-flag/,
    );
  });

  it('fails without retrying when a pinned port is taken', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const { port } = blocker.address() as net.AddressInfo;
    try {
      await expect(startNatsServer({ port })).rejects.toThrow(/address already in use/);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it('aborts a startup in progress, killing the half-started server', async () => {
    const controller = new AbortController();
    let spawnedPid: number | undefined;
    const logger = {
      debug: (fields: Record<string, unknown>, msg?: string) => {
        if (msg === 'nats-server spawned') {
          spawnedPid = fields['pid'] as number;
          controller.abort(new Error('shutdown'));
        }
      },
      info: () => undefined,
      warn: () => undefined,
      error: () => undefined,
    };
    await expect(startNatsServer({ signal: controller.signal, logger })).rejects.toThrow(
      'shutdown',
    );
    expect(spawnedPid).toBeGreaterThan(0);
    expect(() => process.kill(spawnedPid!, 0)).toThrow();
  });

  it('rejects at once for an already-aborted signal', async () => {
    await expect(startNatsServer({ signal: AbortSignal.abort(new Error('user')) })).rejects.toThrow(
      'user',
    );
  });
});
