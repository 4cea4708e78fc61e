import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { withTempDir } from '@troupe/testkit';
import { describeStale, stalePackages } from '../../src/stale-build';

/** A repository with packages `a` and `b`, each with sources and a build, all at `t` seconds. */
function repo(root: string, t: number): void {
  const files = [
    'tsconfig.base.json',
    'a/tsconfig.json',
    'a/src/index.ts',
    'a/src/internal/deep.ts',
    'a/dist/.tsbuildinfo',
    'b/tsconfig.json',
    'b/src/index.ts',
    'b/dist/.tsbuildinfo',
  ];
  writeFileSync(
    path.join(root, 'tsconfig.build.json'),
    JSON.stringify({ files: [], references: [{ path: './a' }, { path: './b' }] }),
  );
  for (const f of files) {
    mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    writeFileSync(path.join(root, f), '');
    utimesSync(path.join(root, f), t, t);
  }
}

const at = (root: string, file: string, t: number) => utimesSync(path.join(root, file), t, t);

test('a build newer than every input is fresh', async () => {
  await withTempDir(async (root) => {
    repo(root, 1_000);
    at(root, 'a/dist/.tsbuildinfo', 2_000);
    expect(stalePackages(root)).toEqual([]);
  });
});

test('a source newer than its package build (at any depth) makes that package stale', async () => {
  await withTempDir(async (root) => {
    repo(root, 1_000);
    at(root, 'a/src/internal/deep.ts', 1_001);
    expect(stalePackages(root)).toEqual([
      { folder: 'a', newer: [path.join('a', 'src', 'internal', 'deep.ts')] },
    ]);
  });
});

test('a newer package or base tsconfig is stale; a missing build is stale', async () => {
  await withTempDir(async (root) => {
    repo(root, 1_000);
    at(root, 'b/tsconfig.json', 1_500);
    expect(stalePackages(root)).toEqual([
      { folder: 'b', newer: [path.join('b', 'tsconfig.json')] },
    ]);
    at(root, 'tsconfig.base.json', 1_500);
    expect(stalePackages(root).map((s) => s.folder)).toEqual(['a', 'b']);
  });
  await withTempDir(async (root) => {
    repo(root, 1_000);
    writeFileSync(path.join(root, 'tsconfig.build.json'), '{"references":[{"path":"./c"}]}');
    mkdirSync(path.join(root, 'c', 'src'), { recursive: true });
    writeFileSync(path.join(root, 'c', 'src', 'index.ts'), '');
    const stale = stalePackages(root);
    expect(stale.map((s) => s.folder)).toEqual(['c']);
    expect(describeStale(stale)).toBe(
      `c (tsconfig.base.json, ${path.join('c', 'src', 'index.ts')})`,
    );
  });
});
