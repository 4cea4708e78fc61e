import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { readTar, type Sandbox, type TarEntry } from '@troupe/node-agent';
import tar from 'tar-stream';
import { dockerFixture, leftovers, removeLeftovers, type DockerFixture } from './helpers';

// The root config's project-level testTimeout is not applied by jest: set it here.
jest.setTimeout(120_000);

/** A tar with entries owned by root, as a user's tool would produce it. */
async function rootOwnedTar(
  entries: { name: string; mode: number; content?: Buffer; dir?: boolean }[],
): Promise<Buffer> {
  const pack = tar.pack();
  for (const e of entries) {
    if (e.dir) pack.entry({ name: e.name, type: 'directory', mode: e.mode, uid: 0, gid: 0 });
    else pack.entry({ name: e.name, mode: e.mode, uid: 0, gid: 0 }, e.content ?? Buffer.alloc(0));
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as unknown as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

function byName(entries: TarEntry[]): Map<string, TarEntry> {
  return new Map(entries.map((e) => [e.name, e]));
}

describe('files, snapshots and forks (Docker)', () => {
  let fx: DockerFixture;
  let sb: Sandbox;
  const binary = randomBytes(70_000);

  beforeAll(async () => {
    fx = await dockerFixture();
    sb = await fx.backend.create(fx.spec({ files: { 'seed/hello.txt': 'seeded' } }));
  });

  afterAll(async () => {
    await fx.backend.close();
    await removeLeftovers(fx.docker, fx.cluster);
  });

  test('spec files are in the workspace once the sandbox is ready', async () => {
    const r = await sb.exec([
      'sh',
      '-c',
      'cat seed/hello.txt; stat -c "%u %a" seed seed/hello.txt',
    ]);
    expect(r.stdout).toBe('seeded1000 755\n1000 644\n');
  });

  test('round-trips a nested tree with modes through put and get', async () => {
    const input = await rootOwnedTar([
      { name: 'tree/', mode: 0o755, dir: true },
      { name: 'tree/a.txt', mode: 0o644, content: Buffer.from('A') },
      { name: 'tree/bin/', mode: 0o750, dir: true },
      { name: 'tree/bin/run.sh', mode: 0o755, content: Buffer.from('#!/bin/sh\necho ran\n') },
      { name: 'tree/deep/er/', mode: 0o700, dir: true },
      { name: 'tree/deep/er/blob.bin', mode: 0o600, content: binary },
    ]);
    await sb.putFiles('/workspace/in/put', Readable.from([input]));
    // Given to the sandbox user (not root, as in the tar), so the sandbox can change it.
    const owners = await sb.exec([
      'sh',
      '-c',
      'cd /workspace/in/put && find . | sort | while read f; do stat -c "%n %u %a" "$f"; done && ./tree/bin/run.sh && echo more >> tree/a.txt',
    ]);
    expect(owners.exitCode).toBe(0);
    expect(owners.stdout).toBe(
      [
        '. 1000 755',
        './tree 1000 755',
        './tree/a.txt 1000 644',
        './tree/bin 1000 750',
        './tree/bin/run.sh 1000 755',
        './tree/deep 1000 755',
        './tree/deep/er 1000 700',
        './tree/deep/er/blob.bin 1000 600',
        'ran',
        '',
      ].join('\n'),
    );
    const out = byName(await readTar(await sb.getFiles('/workspace/in/put/tree')));
    expect([...out.keys()].sort()).toEqual([
      'tree',
      'tree/a.txt',
      'tree/bin',
      'tree/bin/run.sh',
      'tree/deep',
      'tree/deep/er',
      'tree/deep/er/blob.bin',
    ]);
    expect(out.get('tree/a.txt')!.content.toString()).toBe('Amore\n');
    expect(out.get('tree/bin/run.sh')!.mode).toBe(0o755);
    expect(out.get('tree/bin')!.mode).toBe(0o750);
    expect(out.get('tree/deep/er')!.mode).toBe(0o700);
    expect(out.get('tree/deep/er/blob.bin')!.mode).toBe(0o600);
    expect(out.get('tree/deep/er/blob.bin')!.content.equals(binary)).toBe(true);
    expect(out.get('tree/a.txt')!.uid).toBe(1000);
  });

  test('a tar from one place can be put back elsewhere, contents-only with /.', async () => {
    await sb.putFiles('/workspace/maps', {
      'x/y/z.txt': 'zed',
      'run.sh': { content: '#!/bin/sh\necho hi\n', mode: 0o755 },
    });
    const contents = byName(await readTar(await sb.getFiles('/workspace/maps/.')));
    expect([...contents.keys()].sort()).toEqual(['.', './run.sh', './x', './x/y', './x/y/z.txt']);
    await sb.putFiles('/workspace/copy', await sb.getFiles('/workspace/maps/.'));
    const r = await sb.exec([
      'sh',
      '-c',
      'cat /workspace/copy/x/y/z.txt && /workspace/copy/run.sh',
    ]);
    expect(r.stdout).toBe('zedhi\n');
  });

  test('refuses paths outside the workspace and its volumes', async () => {
    await expect(sb.putFiles('/etc', { a: 'b' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('destDir'),
    });
    await expect(sb.getFiles('/tmp')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(sb.putFiles('/workspace', { '../escape': 'x' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(sb.getFiles('/workspace/nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  test('snapshot + fork keeps the workspace; the fork and its source then diverge', async () => {
    await sb.exec(['sh', '-c', 'mkdir -p state && echo v1 > state/file && ln -s file state/link']);
    const snap = await sb.snapshot('files-test');
    try {
      expect(snap.ref).toBe(`troupe-snapshot:${fx.cluster}.files-test`);
      const fork = await fx.backend.fork(snap, { labels: { actor: 'sandbox/fork' } });
      try {
        expect(fork.id).not.toBe(sb.id);
        const info = await fx.docker.getContainer(fork.metadata().containerId!).inspect();
        expect(info.Config.Labels['troupe.actor']).toBe('sandbox/fork');
        expect(info.HostConfig.ReadonlyRootfs).toBe(true);
        const r = await fork.exec([
          'sh',
          '-c',
          'cat state/link seed/hello.txt in/put/tree/a.txt && stat -c "%u" state/file && echo v2 > state/file',
        ]);
        expect(r).toMatchObject({ exitCode: 0, stdout: 'v1\nseededAmore\n1000\n' });
        const original = await sb.exec(['cat', 'state/file']);
        expect(original.stdout).toBe('v1\n');
      } finally {
        await fork.destroy();
      }
    } finally {
      await fx.backend.removeSnapshot(snap);
    }
    await expect(fx.docker.getImage(snap.ref).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  test('with a writable root (a recorded exception) the snapshot also keeps the root filesystem', async () => {
    const rw = await fx.backend.create(fx.spec({ readOnlyRoot: false }, 'sandbox/rw'));
    try {
      expect(rw.metadata().policyExceptions).toEqual(['rootfs:writable']);
      await rw.exec(['sh', '-c', 'echo root-change > /home/troupe/note && echo ws > /workspace/w']);
      const snap = await rw.snapshot('rw-test');
      try {
        const fork = await fx.backend.fork(snap);
        try {
          const r = await fork.exec(['cat', '/home/troupe/note', '/workspace/w']);
          expect(r.stdout).toBe('root-change\nws\n');
          expect(fork.metadata().policyExceptions).toEqual(['rootfs:writable']);
        } finally {
          await fork.destroy();
        }
      } finally {
        await fx.backend.removeSnapshot(snap);
      }
    } finally {
      await rw.destroy();
    }
  });

  test('leaves no containers or volumes behind', async () => {
    await sb.destroy();
    expect(await leftovers(fx.docker, fx.cluster)).toEqual({ containers: [], volumes: [] });
  });
});
