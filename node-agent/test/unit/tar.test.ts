import { Readable } from 'node:stream';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readTar } from '@troupe/node-agent';
import { makeTempDir } from '@troupe/testkit';
import tar from 'tar-stream';
import {
  collect,
  packDirectory,
  packFileMap,
  rewriteTar,
  tarStreamOf,
} from '../../src/internal/tar';
import { packStream } from '../../src/tar-pack';

async function tarOf(
  entries: { name: string; type?: 'directory'; content?: string }[],
): Promise<Buffer> {
  const pack = tar.pack();
  for (const e of entries) {
    if (e.type) pack.entry({ name: e.name, type: e.type, mode: 0o700, uid: 5, gid: 6 });
    else pack.entry({ name: e.name, mode: 0o640, uid: 5, gid: 6 }, e.content ?? '');
  }
  pack.finalize();
  return collect(pack as unknown as AsyncIterable<Buffer>);
}

describe('tar helpers', () => {
  test('a file map becomes a tar with owned parent directories, deterministically', async () => {
    const files = { 'b/c/d.txt': 'D', 'a.sh': { content: '#!/bin/sh', mode: 0o755 } };
    const bytes = await packFileMap(files, { uid: 1000, gid: 1000 });
    expect(bytes.equals(await packFileMap(files, { uid: 1000, gid: 1000 }))).toBe(true);
    const entries = await readTar(bytes);
    expect(entries.map((e) => [e.name, e.type, e.mode, e.uid])).toEqual([
      ['b', 'directory', 0o755, 1000],
      ['b/c', 'directory', 0o755, 1000],
      ['a.sh', 'file', 0o755, 1000],
      ['b/c/d.txt', 'file', 0o644, 1000],
    ]);
  });

  test('rewriting moves entries under a prefix, re-owns them and adds missing parents', async () => {
    const input = await tarOf([
      { name: 'x/y/z.txt', content: 'Z' },
      { name: 'x/', type: 'directory' },
    ]);
    const out = await readTar(
      rewriteTar(Readable.from([input]), { uid: 1000, gid: 1001 }, { prefix: 'in/put' }),
    );
    expect(out.map((e) => [e.name, e.type, e.uid, e.gid, e.mode])).toEqual([
      ['in', 'directory', 1000, 1001, 0o755],
      ['in/put', 'directory', 1000, 1001, 0o755],
      ['in/put/x', 'directory', 1000, 1001, 0o755],
      ['in/put/x/y', 'directory', 1000, 1001, 0o755],
      ['in/put/x/y/z.txt', 'file', 1000, 1001, 0o640],
      ['in/put/x', 'directory', 1000, 1001, 0o700],
    ]);
    expect(out[4]!.content.toString()).toBe('Z');
  });

  test("preserving owners keeps the tar's", async () => {
    const input = await tarOf([{ name: 'f', content: 'F' }]);
    const out = await readTar(await tarStreamOf(input, undefined));
    expect(out.map((e) => [e.name, e.uid, e.gid])).toEqual([['f', 5, 6]]);
  });

  test('refuses entries that escape the destination', async () => {
    for (const name of ['../evil', 'a/../../evil', '/abs/evil']) {
      const input = await tarOf([{ name, content: 'x' }]);
      await expect(readTar(rewriteTar(Readable.from([input]), undefined))).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
    await expect(packFileMap({ '../x': 'a' }, { uid: 0, gid: 0 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  test('packing a directory is deterministic and keeps modes and symlinks', async () => {
    const dir = await makeTempDir('troupe-tar-');
    try {
      await mkdir(path.join(dir.path, 'sub'));
      await writeFile(path.join(dir.path, 'sub', 'run.sh'), 'echo', { mode: 0o755 });
      await writeFile(path.join(dir.path, 'a.txt'), 'A', { mode: 0o600 });
      await symlink('a.txt', path.join(dir.path, 'link'));
      const a = await packDirectory(dir.path, { owner: { uid: 0, gid: 0 } });
      const b = await packDirectory(dir.path, { owner: { uid: 0, gid: 0 } });
      expect(a.equals(b)).toBe(true);
      const entries = await readTar(a);
      expect(entries.map((e) => [e.name, e.type, e.mode, e.linkname ?? ''])).toEqual([
        ['a.txt', 'file', 0o600, ''],
        ['link', 'symlink', expect.any(Number), 'a.txt'],
        ['sub', 'directory', expect.any(Number), ''],
        ['sub/run.sh', 'file', 0o755, ''],
      ]);
    } finally {
      await dir.cleanup();
    }
  });
});

describe('a tar stream destroyed while an entry is open', () => {
  // The consumer of a packed stream may destroy it with an error at any time (an activation
  // fenced mid-upload aborts its store.put). tar-stream then destroys the open entry stream with
  // that error; an entry stream nobody listens to would throw it out of the process.
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown): void => void uncaught.push(err);
  beforeEach(() => {
    uncaught.length = 0;
    process.prependListener('uncaughtException', onUncaught);
  });
  afterEach(() => void process.removeListener('uncaughtException', onUncaught));

  async function destroyMidway(stream: Readable): Promise<unknown> {
    const failed = new Promise((resolve) => stream.once('error', resolve));
    await new Promise<void>((resolve) => stream.once('readable', resolve));
    stream.read();
    stream.destroy(new Error('fenced by a newer activation'));
    const err = await failed;
    // Long enough for streamx's deferred destroy callbacks to have run.
    await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setTimeout(resolve, 20));
    return err;
  }

  test('rewriteTar reports the error to its consumer only', async () => {
    const big = await tarOf([{ name: 'big.bin', content: 'x'.repeat(4 << 20) }]);
    // Hands the tar over in small pieces, so an entry is open when the consumer gives up.
    const input = Readable.from(
      (function* () {
        for (let i = 0; i < big.length; i += 16 << 10) yield big.subarray(i, i + (16 << 10));
      })(),
    );
    const err = await destroyMidway(rewriteTar(input, { uid: 1, gid: 1 }, { prefix: 'w' }));
    expect(String(err)).toContain('fenced by a newer activation');
    expect(uncaught).toEqual([]);
  });

  test('packDirectory-style streams from packStream report it to their consumer only', async () => {
    const stream = packStream(async (add) => {
      await add({ name: 'a/', type: 'directory', mode: 0o755 });
      for (let i = 0; i < 8; i++) {
        await add({ name: `a/${i}.bin`, mode: 0o644 }, Buffer.alloc(1 << 20, i));
      }
    });
    const err = await destroyMidway(stream);
    expect(String(err)).toContain('fenced by a newer activation');
    expect(uncaught).toEqual([]);
  });

  test('a producer failure fails the stream with its error', async () => {
    const stream = packStream(async (add) => {
      await add({ name: 'one.txt' }, Buffer.from('1'));
      throw new Error('changed while it was being copied');
    });
    await expect(collect(stream)).rejects.toThrow('changed while it was being copied');
    expect(uncaught).toEqual([]);
  });
});
