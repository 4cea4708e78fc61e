import { existsSync } from 'node:fs';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { makeTempDir, withTempDir } from '@troupe/testkit';

describe('makeTempDir', () => {
  it('creates a fresh directory under the OS temp dir and removes it with its contents', async () => {
    const dir = await makeTempDir('troupe-unit-');
    expect(path.dirname(dir.path)).toBe(os.tmpdir());
    expect(path.basename(dir.path)).toMatch(/^troupe-unit-/);
    await mkdir(path.join(dir.path, 'nested'));
    await writeFile(path.join(dir.path, 'nested', 'file.txt'), 'x');
    await dir.cleanup();
    expect(existsSync(dir.path)).toBe(false);
    await expect(dir.cleanup()).resolves.toBeUndefined();
  });

  it('gives each caller its own directory', async () => {
    const [a, b] = await Promise.all([makeTempDir('troupe-unit-'), makeTempDir('troupe-unit-')]);
    expect(a.path).not.toBe(b.path);
    await Promise.all([a.cleanup(), b.cleanup()]);
  });
});

describe('withTempDir', () => {
  it('returns the callback value and removes the directory', async () => {
    let seen = '';
    const result = await withTempDir(async (dir) => {
      seen = dir;
      await writeFile(path.join(dir, 'a.txt'), 'hello');
      return readFile(path.join(dir, 'a.txt'), 'utf8');
    });
    expect(result).toBe('hello');
    expect(seen).not.toBe('');
    expect(existsSync(seen)).toBe(false);
  });

  it('removes the directory when the callback throws', async () => {
    let seen = '';
    await expect(
      withTempDir((dir) => {
        seen = dir;
        throw new Error('test failed');
      }),
    ).rejects.toThrow('test failed');
    expect(existsSync(seen)).toBe(false);
  });
});
