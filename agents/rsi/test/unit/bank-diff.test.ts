import { diffBanks, formatBankDiff, MemoryBank, sha256Hex } from '@troupe/rsi';

const limits = { utf8: ['.md'] };

describe('diffBanks', () => {
  const before = MemoryBank.create(
    {
      'keep.md': 'same\n',
      'edit.md': 'one\ntwo\nthree\n',
      'gone.md': 'bye\n',
      'img.bin': new Uint8Array([0, 1, 2]),
    },
    { limits },
  );
  const after = MemoryBank.create(
    {
      'keep.md': 'same\n',
      'edit.md': 'one\n2\nthree\n',
      'new.md': 'hello\n',
      'img.bin': new Uint8Array([0, 1, 3]),
    },
    { limits },
  );

  it('lists added, removed and modified paths with old and new hashes, skipping unchanged files', () => {
    const d = diffBanks(before, after);
    expect(d.fromTreeHash).toBe(before.treeHash);
    expect(d.toTreeHash).toBe(after.treeHash);
    expect(d.added).toEqual(['new.md']);
    expect(d.removed).toEqual(['gone.md']);
    expect(d.modified).toEqual(['edit.md', 'img.bin']);
    expect(d.files.map((f) => f.path)).toEqual(['edit.md', 'gone.md', 'img.bin', 'new.md']);
    expect(d.files.find((f) => f.path === 'edit.md')).toMatchObject({
      status: 'modified',
      oldSha256: sha256Hex('one\ntwo\nthree\n'),
      newSha256: sha256Hex('one\n2\nthree\n'),
      oldSize: 14,
      newSize: 12,
      binary: false,
    });
    const added = d.files.find((f) => f.path === 'new.md')!;
    expect(added.oldSha256).toBeUndefined();
    expect(added.newSha256).toBe(sha256Hex('hello\n'));
    expect(d.files.find((f) => f.path === 'gone.md')!.newSha256).toBeUndefined();
  });

  it('gives text files a unified diff and binary files none', () => {
    const d = diffBanks(before, after);
    const edit = d.files.find((f) => f.path === 'edit.md')!;
    expect(edit.patch).toBe(
      [
        '--- a/edit.md',
        '+++ b/edit.md',
        '@@ -1,3 +1,3 @@',
        ' one',
        '-two',
        '+2',
        ' three',
        '',
      ].join('\n'),
    );
    expect(d.files.find((f) => f.path === 'new.md')!.patch).toBe(
      ['--- /dev/null', '+++ b/new.md', '@@ -0,0 +1,1 @@', '+hello', ''].join('\n'),
    );
    expect(d.files.find((f) => f.path === 'gone.md')!.patch).toContain(
      '+++ /dev/null\n@@ -1,1 +0,0 @@\n-bye\n',
    );
    const img = d.files.find((f) => f.path === 'img.bin')!;
    expect(img.binary).toBe(true);
    expect(img.patch).toBeUndefined();
    const text = formatBankDiff(d);
    expect(text).toContain('Binary files a/img.bin and b/img.bin differ\n');
    expect(text.indexOf('--- a/edit.md')).toBeLessThan(text.indexOf('Binary files'));
  });

  it('is empty between equal banks and marks a diff over maxEditLength as omitted', () => {
    expect(diffBanks(before, before).files).toEqual([]);
    const a = MemoryBank.create({
      'x.md': Array.from({ length: 50 }, (_, i) => `a${i}\n`).join(''),
    });
    const b = MemoryBank.create({
      'x.md': Array.from({ length: 50 }, (_, i) => `b${i}\n`).join(''),
    });
    const d = diffBanks(a, b, { maxEditLength: 5 });
    expect(d.files[0]).toMatchObject({ path: 'x.md', patchOmitted: true, binary: false });
    expect(d.files[0]!.patch).toBeUndefined();
    expect(formatBankDiff(d)).toBe('Files (diff too large) a/x.md and b/x.md differ\n');
  });
});
