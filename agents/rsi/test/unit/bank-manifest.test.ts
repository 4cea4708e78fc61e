import { createHash } from 'node:crypto';
import {
  BANK_MANIFEST_HEADER,
  MemoryBank,
  parseManifest,
  serializeManifest,
  treeHashOf,
} from '@troupe/rsi';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

describe('canonical manifest and tree hash', () => {
  it('serialises sorted "<sha256> <size> <path>" lines under a header, and hashes exactly those bytes', () => {
    const bank = MemoryBank.create({ 'b.md': 'bee', 'a/z.txt': 'zed', 'a.md': '' });
    const expected =
      `${BANK_MANIFEST_HEADER}\n` +
      `${sha('')} 0 a.md\n` +
      `${sha('zed')} 3 a/z.txt\n` +
      `${sha('bee')} 3 b.md\n`;
    expect(bank.manifestText).toBe(expected);
    expect(bank.treeHash).toBe(sha(expected));
    expect(bank.paths).toEqual(['a.md', 'a/z.txt', 'b.md']);
    expect(bank.totalBytes).toBe(6);
  });

  it('gives the same hash whatever order the files were added in', () => {
    const files: [string, string][] = [
      ['lessons/x.md', 'one'],
      ['lessons/y.md', 'two'],
      ['README.md', 'three'],
      ['a-b/c_d.e', 'four'],
    ];
    const forward = MemoryBank.create(files);
    const backward = MemoryBank.create([...files].reverse());
    const asMap = MemoryBank.create(new Map([...files].sort(() => -1)));
    expect(backward.treeHash).toBe(forward.treeHash);
    expect(asMap.treeHash).toBe(forward.treeHash);
    expect(serializeManifest([...forward.manifest].reverse())).toBe(forward.manifestText);
  });

  it('changes the hash on any change of content, path or file set', () => {
    const base = MemoryBank.create({ 'a.md': 'x', 'b.md': 'y' });
    const hashes = new Set([
      base.treeHash,
      MemoryBank.create({ 'a.md': 'x', 'b.md': 'z' }).treeHash,
      MemoryBank.create({ 'a.md': 'x', 'c.md': 'y' }).treeHash,
      MemoryBank.create({ 'a.md': 'x' }).treeHash,
      MemoryBank.create({ 'a.md': 'x', 'b.md': 'y', 'c.md': '' }).treeHash,
      MemoryBank.create({}).treeHash,
    ]);
    expect(hashes.size).toBe(6);
    expect(MemoryBank.create({}).treeHash).toBe(sha(`${BANK_MANIFEST_HEADER}\n`));
  });

  it('orders paths byte-wise, not by locale ("B" before "a", "a-" before "a/" before "a0")', () => {
    const bank = MemoryBank.create({ a0: '', 'a/b': '', 'a-': '', B: '' });
    expect(bank.paths).toEqual(['B', 'a-', 'a/b', 'a0']);
  });

  it('parses back exactly what it writes and refuses anything else', () => {
    const bank = MemoryBank.create(
      { 'x/y.md': 'hello', 'z.bin': new Uint8Array([1, 2, 3]) },
      { limits: { utf8: 'none' } },
    );
    expect(parseManifest(bank.manifestText)).toEqual(bank.manifest);
    expect(treeHashOf(parseManifest(bank.manifestText))).toBe(bank.treeHash);
    const lines = bank.manifestText.split('\n');
    expect(() => parseManifest(lines.slice(1).join('\n'))).toThrow(/line 1/);
    expect(() => parseManifest(`${lines[0]}\n${lines[2]}\n${lines[1]}\n`)).toThrow(
      /byte-wise order/,
    );
    expect(() => parseManifest(bank.manifestText.replace(' 5 ', ' 05 '))).toThrow(/line 2/);
    expect(() => parseManifest(bank.manifestText.slice(0, -1))).toThrow(/newline/);
  });

  it("copies content in and out: changing the caller's array later does not change the bank", () => {
    const bytes = new Uint8Array([104, 105]);
    const bank = MemoryBank.create({ 'a.txt': bytes });
    const hash = bank.treeHash;
    bytes[0] = 0;
    bank.read('a.txt')![1] = 0;
    expect(bank.readText('a.txt')).toBe('hi');
    expect(MemoryBank.create({ 'a.txt': 'hi' }).treeHash).toBe(hash);
  });
});
