import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { hasErrorCode } from '@troupe/proto';
import {
  exportBankTarball,
  importBankTarball,
  isBankIntegrityError,
  MemoryBank,
} from '@troupe/rsi';
import { extract, pack } from 'tar-stream';

async function entriesOf(tar: Uint8Array): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const ex = extract();
  Readable.from([Buffer.from(tar)]).pipe(ex);
  for await (const e of ex) {
    const chunks: Buffer[] = [];
    for await (const c of e) chunks.push(c as Buffer);
    out.set(e.header.name, Buffer.concat(chunks));
  }
  return out;
}

async function tarOf(
  entries: {
    name: string;
    data?: string | Buffer;
    type?: 'file' | 'symlink' | 'directory';
    linkname?: string;
  }[],
): Promise<Uint8Array> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const c of p) chunks.push(c as Buffer);
  })();
  for (const e of entries) {
    const data = typeof e.data === 'string' ? Buffer.from(e.data) : (e.data ?? Buffer.alloc(0));
    if (e.type === 'symlink' || e.type === 'directory') {
      p.entry({ name: e.name, type: e.type, ...(e.linkname ? { linkname: e.linkname } : {}) });
    } else p.entry({ name: e.name, size: data.byteLength }, data);
  }
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

async function importError(data: Uint8Array, options = {}): Promise<Error> {
  try {
    await importBankTarball(data, options);
  } catch (err) {
    return err as Error;
  }
  throw new Error('import succeeded');
}

describe('bank tarballs', () => {
  const bank = MemoryBank.create({ 'lessons/a.md': 'alpha\n', 'README.md': 'bank\n' });

  it('holds bank.json, the canonical MANIFEST and files/<path>, deterministically', async () => {
    const tar = await exportBankTarball(bank, { meta: { bankId: 'b1' } });
    const entries = await entriesOf(tar);
    expect([...entries.keys()]).toEqual([
      'bank.json',
      'MANIFEST',
      'files/README.md',
      'files/lessons/a.md',
    ]);
    expect(entries.get('MANIFEST')!.toString()).toBe(bank.manifestText);
    expect(JSON.parse(entries.get('bank.json')!.toString())).toEqual({
      format: 'troupe-memory-bank/1',
      treeHash: bank.treeHash,
      fileCount: 2,
      totalBytes: 11,
      meta: { bankId: 'b1' },
    });
    expect(entries.get('files/lessons/a.md')!.toString()).toBe('alpha\n');
    const again = await exportBankTarball(
      MemoryBank.create({ 'README.md': 'bank\n', 'lessons/a.md': 'alpha\n' }),
      {
        meta: { bankId: 'b1' },
      },
    );
    expect(Buffer.compare(Buffer.from(tar), Buffer.from(again))).toBe(0);
  });

  it('imports what it exports (plain and gzip), verifying the tree hash', async () => {
    for (const gzip of [false, true]) {
      const tar = await exportBankTarball(bank, { gzip });
      const { bank: back, meta } = await importBankTarball(tar, { expectTreeHash: bank.treeHash });
      expect(back.treeHash).toBe(bank.treeHash);
      expect(back.readText('lessons/a.md')).toBe('alpha\n');
      expect(meta.treeHash).toBe(bank.treeHash);
    }
  });

  it('refuses a file changed after export, naming the path and both hashes', async () => {
    const entries = await entriesOf(await exportBankTarball(bank));
    const tampered = await tarOf([
      { name: 'bank.json', data: entries.get('bank.json')! },
      { name: 'MANIFEST', data: entries.get('MANIFEST')! },
      { name: 'files/README.md', data: 'b4nk\n' },
      { name: 'files/lessons/a.md', data: entries.get('files/lessons/a.md')! },
    ]);
    const err = await importError(tampered);
    expect(isBankIntegrityError(err)).toBe(true);
    expect(err.message).toMatch(
      /files\/README\.md has sha256 [0-9a-f]{64} \(5 bytes\) but MANIFEST says [0-9a-f]{64}/,
    );
    expect((err as { details?: Record<string, unknown> }).details).toMatchObject({
      mismatch: 'manifest',
      path: 'README.md',
    });
  });

  it('refuses a MANIFEST and bank.json rewritten to match changed files unless the hash is the expected one', async () => {
    const changed = MemoryBank.create({ 'README.md': 'evil\n', 'lessons/a.md': 'alpha\n' });
    const tar = await exportBankTarball(changed);
    const err = await importError(tar, { expectTreeHash: bank.treeHash });
    expect(isBankIntegrityError(err)).toBe(true);
    expect(err.message).toBe(
      `tarball: tree hash is ${changed.treeHash}, expected ${bank.treeHash}`,
    );
  });

  it('refuses an extra file, a missing file, and a bank.json with a wrong tree hash', async () => {
    const entries = await entriesOf(await exportBankTarball(bank));
    const base = [
      { name: 'bank.json', data: entries.get('bank.json')! },
      { name: 'MANIFEST', data: entries.get('MANIFEST')! },
      { name: 'files/README.md', data: entries.get('files/README.md')! },
    ];
    const missing = await importError(await tarOf(base));
    expect(missing.message).toBe(
      'tarball: MANIFEST lists "lessons/a.md" but files/ does not have it',
    );
    const extra = await importError(
      await tarOf([
        ...base,
        { name: 'files/lessons/a.md', data: 'alpha\n' },
        { name: 'files/x.md', data: '' },
      ]),
    );
    expect(extra.message).toBe('tarball: files/x.md is not listed in MANIFEST');
    const meta = JSON.parse(entries.get('bank.json')!.toString());
    const wrongMeta = await importError(
      await tarOf([
        { name: 'bank.json', data: JSON.stringify({ ...meta, treeHash: '0'.repeat(64) }) },
        ...base.slice(1),
        { name: 'files/lessons/a.md', data: 'alpha\n' },
      ]),
    );
    expect(wrongMeta.message).toBe(
      `tarball: tree hash is ${bank.treeHash} but bank.json says ${'0'.repeat(64)}`,
    );
  });

  it('refuses links, unknown entries, escaping paths, oversized files and garbage', async () => {
    const entries = await entriesOf(await exportBankTarball(bank));
    const head = [
      { name: 'bank.json', data: entries.get('bank.json')! },
      { name: 'MANIFEST', data: entries.get('MANIFEST')! },
    ];
    const link = await importError(
      await tarOf([...head, { name: 'files/l.md', type: 'symlink', linkname: '/etc/passwd' }]),
    );
    expect(link.message).toBe('`tarball`: entry "files/l.md" must be a regular file (is symlink)');
    const unknown = await importError(await tarOf([...head, { name: 'evil.sh', data: 'x' }]));
    expect(unknown.message).toMatch(/entry "evil.sh" is not bank.json, MANIFEST or files\/<path>/);
    const escape = await importError(await tarOf([...head, { name: 'files/../x.md', data: 'x' }]));
    expect(hasErrorCode(escape, 'INVALID_ARGUMENT')).toBe(true);
    expect(escape.message).toContain('files["../x.md"]: path must not contain ".." segments');
    const big = await importError(
      await tarOf([...head, { name: 'files/big.md', data: 'x'.repeat(11) }]),
      {
        limits: { maxFileBytes: 10, maxTotalBytes: 100 },
      },
    );
    expect(big.message).toBe('`tarball`: entry "files/big.md" is 11 bytes, more than 10');
    const garbage = await importError(new Uint8Array(1024).fill(7));
    expect(hasErrorCode(garbage, 'INVALID_ARGUMENT')).toBe(true);
    const bomb = await importError(gzipSync(Buffer.alloc(50 * 1024 * 1024)), {
      limits: { maxFiles: 2, maxFileBytes: 10, maxTotalBytes: 20 },
    });
    expect(bomb.message).toMatch(/gzip data is corrupt or inflates past \d+ bytes/);
  });
});
