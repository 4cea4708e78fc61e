import { connect, type NatsConnection } from '@nats-io/transport-node';
import { hasErrorCode } from '@troupe/proto';
import {
  applyBankChanges,
  type BankCommit,
  BankStore,
  blobName,
  commitHashOf,
  commitKey,
  importBankTarball,
  isBankIntegrityError,
  MemoryBank,
  sha256Hex,
  treeHashOf,
} from '@troupe/rsi';
import { type NatsServerHandle, randomClusterName, startNatsServer } from '@troupe/testkit';

// The bank store against a real nats-server with JetStream: versions round-trip, two writers on
// one parent cannot both win, and anything changed behind the store's back fails the load.

let server: NatsServerHandle;
const connections: NatsConnection[] = [];
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  for (const nc of connections) await nc.close();
  await server.stop();
});

async function openStore(cluster: string): Promise<BankStore> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  return BankStore.open(nc, { cluster });
}

function changed(bank: MemoryBank, changes: unknown): MemoryBank {
  const r = applyBankChanges(bank, changes);
  if (!r.ok) throw new Error(r.rejection.reason);
  return r.bank;
}

async function loadError(
  p: Promise<unknown>,
): Promise<Error & { details?: Record<string, unknown> }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { details?: Record<string, unknown> };
  }
  throw new Error('load succeeded');
}

/** Two versions of bank `b1`: v1 with two lessons, v2 with one modified and one added. */
async function twoVersions(store: BankStore) {
  const bank1 = MemoryBank.create({ 'lessons/a.md': 'alpha\n', 'README.md': 'the bank\n' });
  const v1 = await store.commit({
    bankId: 'b1',
    parent: null,
    bank: bank1,
    author: 'test',
    message: 'seed',
  });
  const bank2 = changed(bank1, [
    { op: 'modify', path: 'lessons/a.md', content: 'alpha\nmore\n' },
    { op: 'add', path: 'lessons/b.md', content: 'beta\n' },
  ]);
  const v2 = await store.commit({
    bankId: 'b1',
    parent: v1,
    bank: bank2,
    author: 'agent/rsi-actor-1',
    role: 'actor',
    message: 'lesson from task t1',
  });
  return { bank1, bank2, v1, v2 };
}

test('commit and load round trip: by version, commit hash, tree hash and head; blobs deduplicated; diff and tarball', async () => {
  const store = await openStore(randomClusterName());
  expect(await store.head('b1')).toBeUndefined();
  const { bank1, bank2, v1, v2 } = await twoVersions(store);
  expect(v1).toMatchObject({ version: 1, parent: null, treeHash: bank1.treeHash, author: 'test' });
  expect(v2).toMatchObject({
    version: 2,
    parent: v1.commitHash,
    treeHash: bank2.treeHash,
    role: 'actor',
  });

  for (const ref of [
    { version: 2 },
    { commitHash: v2.commitHash },
    { treeHash: bank2.treeHash },
    'head',
  ] as const) {
    const { commit, bank } = await store.load('b1', ref);
    expect(commit).toEqual(v2);
    expect(bank.treeHash).toBe(bank2.treeHash);
    expect(bank.readText('lessons/b.md')).toBe('beta\n');
  }
  const old = await store.load('b1', { version: 1 }, { expectTreeHash: bank1.treeHash });
  expect(old.bank.readText('lessons/a.md')).toBe('alpha\n');
  expect((await store.head('b1'))?.commitHash).toBe(v2.commitHash);
  expect((await store.history('b1')).map((c) => c.version)).toEqual([1, 2]);

  // README.md is in both versions but stored once: 2 + 2 new blobs in all.
  const blobs = (await store.objects.list()).map((info) => info.name);
  expect(blobs.sort()).toEqual(
    [...new Set([...bank1.manifest, ...bank2.manifest].map((e) => blobName(e.sha256)))].sort(),
  );
  expect(blobs).toHaveLength(4);

  const diff = await store.diff('b1', { version: 1 }, { version: 2 });
  expect(diff).toMatchObject({ added: ['lessons/b.md'], removed: [], modified: ['lessons/a.md'] });
  expect(diff.files[0]?.patch).toContain('--- a/lessons/a.md\n+++ b/lessons/a.md\n');
  expect(diff.files[0]?.patch).toContain('+more\n');

  const tar = await store.exportTarball('b1', { version: 2 }, { gzip: true });
  const imported = await importBankTarball(tar, { expectTreeHash: v2.treeHash });
  expect(imported.bank.treeHash).toBe(v2.treeHash);
  expect(imported.meta.meta).toMatchObject({
    commit: { bankId: 'b1', version: 2, commitHash: v2.commitHash },
  });
  // The imported bank commits as the next version with the same tree.
  const v3 = await store.commit({
    bankId: 'b1',
    parent: v2,
    bank: imported.bank,
    author: 'import',
  });
  expect(v3.treeHash).toBe(v2.treeHash);
  expect((await store.load('b1', { treeHash: v2.treeHash })).commit.version).toBe(2);

  const again = await loadError(
    store.commit({ bankId: 'b1', parent: null, bank: bank1, author: 't' }),
  );
  expect(hasErrorCode(again, 'ALREADY_EXISTS')).toBe(true);
  expect(again.message).toBe('bank b1 already has a version 1: load its head and commit on it');

  const missing = await loadError(store.load('b1', { version: 9 }));
  expect(hasErrorCode(missing, 'NOT_FOUND')).toBe(true);
  const unknownParent = await loadError(
    store.commit({
      bankId: 'b1',
      parent: { version: 3, commitHash: v1.commitHash },
      bank: bank1,
      author: 't',
    }),
  );
  expect(unknownParent.message).toContain(
    '`parent.commitHash`: must be the commit hash of version 3',
  );
});

test('two writers committing on the same parent: exactly one wins, the other gets ALREADY_EXISTS', async () => {
  const cluster = randomClusterName();
  const [a, b] = await Promise.all([openStore(cluster), openStore(cluster)]);
  const base = MemoryBank.create({ 'README.md': 'base\n' });
  const v1 = await a.commit({ bankId: 'race', parent: null, bank: base, author: 'seed' });
  const fromB = await b.load('race', 'head');
  const results = await Promise.allSettled([
    a.commit({
      bankId: 'race',
      parent: v1,
      bank: changed(base, [{ op: 'add', path: 'a.md', content: 'A' }]),
      author: 'a',
    }),
    b.commit({
      bankId: 'race',
      parent: fromB.commit,
      bank: changed(fromB.bank, [{ op: 'add', path: 'b.md', content: 'B' }]),
      author: 'b',
    }),
  ]);
  const won = results.filter(
    (r): r is PromiseFulfilledResult<BankCommit> => r.status === 'fulfilled',
  );
  const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  expect(won).toHaveLength(1);
  expect(lost).toHaveLength(1);
  expect(hasErrorCode(lost[0]!.reason, 'ALREADY_EXISTS')).toBe(true);
  expect((lost[0]!.reason as Error).message).toContain('version 2 was committed by another writer');
  const head = await b.head('race');
  expect(head?.commitHash).toBe(won[0]!.value.commitHash);
  expect(head?.version).toBe(2);

  // The loser reloads the head, reapplies its change and commits version 3.
  const loser = won[0]!.value.author === 'a' ? b : a;
  const latest = await loser.load('race', 'head');
  const v3 = await loser.commit({
    bankId: 'race',
    parent: latest.commit,
    bank: changed(latest.bank, [{ op: 'add', path: 'c.md', content: 'C' }]),
    author: 'loser',
  });
  expect(v3.version).toBe(3);
  expect((await a.load('race', 'head')).bank.paths).toEqual([
    'README.md',
    won[0]!.value.author === 'a' ? 'a.md' : 'b.md',
    'c.md',
  ]);
});

describe("tamper detection: data changed behind the store's back fails the load, naming the mismatch", () => {
  let store: BankStore;
  let v1: BankCommit;
  let v2: BankCommit;
  let bank2: MemoryBank;
  beforeEach(async () => {
    store = await openStore(randomClusterName());
    ({ v1, v2, bank2 } = await twoVersions(store));
  });

  async function rewriteRecord(edit: (c: BankCommit) => BankCommit): Promise<void> {
    const current = JSON.parse((await store.kv.get(commitKey('b1', 2)))!.string()) as BankCommit;
    await store.kv.put(commitKey('b1', 2), JSON.stringify(edit(current)));
  }

  test('a blob overwritten with other bytes', async () => {
    const b = bank2.manifest.find((e) => e.path === 'lessons/b.md')!;
    await store.objects.putBlob({ name: blobName(b.sha256) }, new TextEncoder().encode('BETA\n'));
    const err = await loadError(store.load('b1', { version: 2 }));
    expect(isBankIntegrityError(err)).toBe(true);
    expect(hasErrorCode(err, 'INTERNAL')).toBe(true);
    expect(err.message).toBe(
      `bank b1 version 2: blob of lessons/b.md has sha256 ${sha256Hex('BETA\n')}, the manifest says ${b.sha256}`,
    );
    expect(err.details).toMatchObject({
      mismatch: 'blob',
      path: 'lessons/b.md',
      expected: b.sha256,
      version: 2,
    });
    // Version 1 does not use that blob and still loads.
    await expect(store.load('b1', { version: 1 })).resolves.toMatchObject({
      commit: { commitHash: v1.commitHash },
    });
  });

  test('a blob deleted', async () => {
    const a = bank2.manifest.find((e) => e.path === 'lessons/a.md')!;
    await store.objects.delete(blobName(a.sha256));
    const err = await loadError(store.load('b1', 'head'));
    expect(isBankIntegrityError(err)).toBe(true);
    expect(err.details).toMatchObject({ mismatch: 'blob-missing', path: 'lessons/a.md' });
    expect(err.message).toContain(`blob ${a.sha256} of lessons/a.md is missing`);
  });

  test('a commit record edited (its message)', async () => {
    await rewriteRecord((c) => ({ ...c, message: 'something else' }));
    const err = await loadError(store.load('b1', { version: 2 }));
    expect(isBankIntegrityError(err)).toBe(true);
    expect(err.details).toMatchObject({ mismatch: 'commit', expected: v2.commitHash });
    expect(err.message).toMatch(
      /^bank b1 version 2: commit record hashes to [0-9a-f]{64}, not its recorded commit hash/,
    );
  });

  test('a manifest entry pointed at other content, commit hash recomputed', async () => {
    const other = v1.manifest.find((e) => e.path === 'lessons/a.md')!;
    await rewriteRecord(({ commitHash: _old, ...body }) => {
      const manifest = body.manifest.map((e) => (e.path === 'lessons/a.md' ? { ...other } : e));
      const edited = { ...body, manifest };
      return { ...edited, commitHash: commitHashOf(edited) };
    });
    const err = await loadError(store.load('b1', { version: 2 }));
    expect(isBankIntegrityError(err)).toBe(true);
    expect(err.details).toMatchObject({ mismatch: 'tree-hash', expected: v2.treeHash });
  });

  test('a fully consistent rewrite is caught by the expected tree hash (the frozen bank check)', async () => {
    const other = v1.manifest.find((e) => e.path === 'lessons/a.md')!;
    await rewriteRecord(({ commitHash: _old, ...body }) => {
      const manifest = body.manifest.map((e) => (e.path === 'lessons/a.md' ? { ...other } : e));
      const edited = { ...body, manifest, treeHash: treeHashOf(manifest) };
      return { ...edited, commitHash: commitHashOf(edited) };
    });
    const err = await loadError(store.load('b1', { version: 2 }, { expectTreeHash: v2.treeHash }));
    expect(isBankIntegrityError(err)).toBe(true);
    expect(err.details).toMatchObject({ mismatch: 'expected', expected: v2.treeHash });
    expect(err.message).toContain(`expected ${v2.treeHash}`);
    // Its commit hash changed too, so loading by the known commit hash fails as well.
    const byHash = await loadError(store.load('b1', { commitHash: v2.commitHash }));
    expect(isBankIntegrityError(byHash)).toBe(true);
    expect(byHash.details).toMatchObject({ mismatch: 'commit' });
  });

  test('a record that is not a commit record, and a record moved to another version', async () => {
    await store.kv.put(commitKey('b1', 2), '{"hello":1}');
    const malformed = await loadError(store.load('b1', { version: 2 }));
    expect(malformed.details).toMatchObject({ mismatch: 'record' });
    expect(malformed.message).toMatch(/^bank b1 version 2: commit record is malformed/);
    await store.kv.put(commitKey('b1', 2), JSON.stringify(v1));
    const moved = await loadError(store.load('b1', { version: 2 }));
    expect(moved.details).toMatchObject({ mismatch: 'commit' });
    expect(moved.message).toBe('bank b1 version 2: record says bank b1 version 1');
  });
});
