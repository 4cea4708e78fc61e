import { hasErrorCode } from '@troupe/proto';
import {
  applyBankChanges,
  type BankChangeResult,
  bankPathRule,
  MemoryBank,
  parseBankLimits,
} from '@troupe/rsi';

const limits = parseBankLimits();

function rejection(result: BankChangeResult) {
  if (result.ok)
    throw new Error(`expected a rejection, got a bank of ${result.bank.paths.join(', ')}`);
  return result.rejection;
}

describe('bank path rules', () => {
  it.each([['lessons/x.md'], ['README'], ['.hidden/a_b-c.d'], ['a/b/c/d/e/f/g/h']])(
    'accepts %j',
    (path) => {
      expect(bankPathRule(path, limits)).toBeUndefined();
    },
  );

  it.each([
    ['', /must not be empty/],
    ['/etc/passwd', /relative, not absolute/],
    ['C:/x', /relative, not absolute/],
    ['a/../b', /"\.\." segments/],
    ['..', /"\.\." segments/],
    ['./a', /"\." segments/],
    ['a//b', /empty segments/],
    ['a/', /empty segments/],
    ['a\\b', /separator/],
    ['a\u0000b', /NUL or other control/],
    ['a\nb', /NUL or other control/],
    ['a b.md', /\[A-Za-z0-9._-\]/],
    ['é.md', /\[A-Za-z0-9._-\]/],
    ['a/b/c/d/e/f/g/h/i', /at most 8 segments \(maxDepth\), has 9/],
    ['x'.repeat(201), /at most 200 characters \(maxPathLength\)/],
  ])('rejects %j', (path, rule) => {
    expect(bankPathRule(path, limits)).toMatch(rule);
  });
});

describe('MemoryBank.create boundaries', () => {
  it('names each broken field and rule in one INVALID_ARGUMENT', () => {
    let caught: unknown;
    try {
      MemoryBank.create(
        { '../up.md': 'x', 'big.md': 'y'.repeat(11), 'bin.md': new Uint8Array([0xff, 0xfe]) },
        { limits: { maxFileBytes: 10, maxTotalBytes: 20 } },
      );
    } catch (err) {
      caught = err;
    }
    expect(hasErrorCode(caught, 'INVALID_ARGUMENT')).toBe(true);
    const message = (caught as Error).message;
    expect(message).toContain('files["../up.md"]: path must not contain ".." segments');
    expect(message).toContain('files["big.md"]: file is 11 bytes, more than maxFileBytes (10)');
    expect(message).toContain('files["bin.md"]: file must be valid UTF-8 text');
    const rules = (
      caught as { details: { violations: { rule: string }[] } }
    ).details.violations.map((v) => v.rule);
    expect(rules).toEqual(['path', 'file-size', 'format']);
  });

  it('checks count, total size, file/directory clashes and case-insensitive twins', () => {
    expect(() =>
      MemoryBank.create({ a: '1', b: '2', c: '3' }, { limits: { maxFiles: 2 } }),
    ).toThrow('files: bank has 3 files, more than maxFiles (2)');
    expect(() =>
      MemoryBank.create(
        { a: '12345', b: '12345' },
        { limits: { maxFileBytes: 5, maxTotalBytes: 9 } },
      ),
    ).toThrow('files: bank totals 10 bytes, more than maxTotalBytes (9)');
    expect(() => MemoryBank.create({ 'a/b.md': '', a: '' })).toThrow(
      'files["a/b.md"]: path is inside "a", which is a file',
    );
    expect(() => MemoryBank.create({ 'Notes.md': '', 'notes.md': '' })).toThrow(
      /files\["notes.md"\]: path must not equal "Notes.md" ignoring case/,
    );
  });

  it('requires UTF-8 only where configured', () => {
    const binary = new Uint8Array([0xc3, 0x28]);
    expect(() => MemoryBank.create({ 'x.bin': binary })).toThrow(/UTF-8/);
    expect(MemoryBank.create({ 'x.bin': binary }, { limits: { utf8: 'none' } }).fileCount).toBe(1);
    const some = { utf8: ['.md', '.txt'] };
    expect(MemoryBank.create({ 'x.bin': binary }, { limits: some }).fileCount).toBe(1);
    expect(() => MemoryBank.create({ 'x.md': binary }, { limits: some })).toThrow(
      'files["x.md"]: file must be valid UTF-8 text',
    );
  });

  it('validates the limits themselves, naming the field', () => {
    expect(() => parseBankLimits({ maxFiles: 0 })).toThrow(/limits\.maxFiles/);
    expect(() => parseBankLimits({ maxFileBytes: 10, maxTotalBytes: 5 })).toThrow(
      'limits.maxFileBytes: must not exceed maxTotalBytes (5)',
    );
    expect(() => parseBankLimits({ utf8: ['md'] })).toThrow(/limits\.utf8\[0\]/);
    expect(() => parseBankLimits({ maxFile: 3 } as never)).toThrow(/maxFile/);
  });
});

describe('applyBankChanges', () => {
  const bank = MemoryBank.create(
    { 'lessons/a.md': 'alpha\n', 'README.md': 'bank\n' },
    { limits: { maxFiles: 3, maxFileBytes: 64, maxTotalBytes: 100 } },
  );

  it('applies add, modify and delete into a new bank and leaves the old one as it is', () => {
    const result = applyBankChanges(bank, [
      { op: 'add', path: 'lessons/b.md', content: 'beta\n' },
      { op: 'modify', path: 'lessons/a.md', content: 'alpha 2\n' },
      { op: 'delete', path: 'README.md' },
    ]);
    if (!result.ok) throw new Error(result.rejection.reason);
    expect(result.bank.paths).toEqual(['lessons/a.md', 'lessons/b.md']);
    expect(result.bank.readText('lessons/a.md')).toBe('alpha 2\n');
    expect(result).toMatchObject({
      added: ['lessons/b.md'],
      modified: ['lessons/a.md'],
      deleted: ['README.md'],
    });
    expect(result.bank.limits).toEqual(bank.limits);
    expect(bank.paths).toEqual(['README.md', 'lessons/a.md']);
  });

  it.each([
    [
      'a path that escapes the bank',
      [{ op: 'add', path: '../etc/passwd', content: 'x' }],
      'path',
      'changes[0].path: path must not contain ".." segments',
    ],
    [
      'an absolute path',
      [{ op: 'add', path: '/abs.md', content: 'x' }],
      'path',
      'changes[0].path: path must be relative, not absolute',
    ],
    [
      'a file over maxFileBytes',
      [{ op: 'add', path: 'big.md', content: 'x'.repeat(65) }],
      'file-size',
      'changes[0]: file is 65 bytes, more than maxFileBytes (64)',
    ],
    [
      'a bank over maxTotalBytes',
      [
        { op: 'add', path: 'b.md', content: 'x'.repeat(64) },
        { op: 'modify', path: 'README.md', content: 'x'.repeat(31) },
      ],
      'total-size',
      'files: bank totals 101 bytes, more than maxTotalBytes (100)',
    ],
    [
      'a bank over maxFiles',
      [
        { op: 'add', path: 'b.md', content: '' },
        { op: 'add', path: 'c.md', content: '' },
      ],
      'file-count',
      'files: bank has 4 files, more than maxFiles (3)',
    ],
    [
      'content that is not UTF-8',
      [{ op: 'modify', path: 'README.md', content: new Uint8Array([0xff]) }],
      'format',
      'changes[0]: file must be valid UTF-8 text',
    ],
    [
      'an add of an existing path',
      [{ op: 'add', path: 'README.md', content: 'x' }],
      'change',
      'changes[0]: add of "README.md", which already exists',
    ],
    [
      'a modify of a missing path',
      [{ op: 'modify', path: 'nope.md', content: 'x' }],
      'change',
      'changes[0]: modify of "nope.md", which does not exist',
    ],
    [
      'a delete of a missing path',
      [{ op: 'delete', path: 'nope.md' }],
      'change',
      'changes[0]: delete of "nope.md", which does not exist',
    ],
    [
      'two changes to one path',
      [
        { op: 'delete', path: 'README.md' },
        { op: 'add', path: 'README.md', content: 'x' },
      ],
      'change',
      'changes[1]: changes "README.md" again (already changed by changes[0])',
    ],
    ['an unknown op', [{ op: 'rename', path: 'README.md' }], 'change', 'changes[0]'],
    [
      'content of the wrong type',
      [{ op: 'add', path: 'n.md', content: 42 }],
      'change',
      'changes[0].content: must be a string or a Uint8Array',
    ],
    [
      'an unknown field',
      [{ op: 'delete', path: 'README.md', force: true }],
      'change',
      'changes[0]',
    ],
    ['something that is not a list', { op: 'delete', path: 'README.md' }, 'change', 'changes'],
  ])('rejects %s with the field and the rule', (_what, changes, rule, message) => {
    const r = rejection(applyBankChanges(bank, changes));
    expect(r.violations[0]?.rule).toBe(rule);
    expect(r.reason).toContain(message);
    expect(r.violations.map((v) => v.message).join('; ')).toBe(r.reason);
  });

  it('applies nothing when any change is rejected', () => {
    const before = bank.treeHash;
    rejection(
      applyBankChanges(bank, [
        { op: 'delete', path: 'README.md' },
        { op: 'add', path: 'a b.md', content: 'x' },
      ]),
    );
    expect(bank.treeHash).toBe(before);
    expect(bank.has('README.md')).toBe(true);
  });

  it('can check a change against tighter limits than the bank was made with', () => {
    const r = rejection(
      applyBankChanges(bank, [{ op: 'add', path: 'n.md', content: 'hello' }], {
        limits: { maxFileBytes: 4, maxTotalBytes: 100 },
      }),
    );
    expect(r.reason).toContain('files["README.md"]: file is 5 bytes, more than maxFileBytes (4)');
    expect(r.reason).toContain('changes[0]: file is 5 bytes, more than maxFileBytes (4)');
  });
});
