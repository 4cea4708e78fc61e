import { parseWith } from '@troupe/proto';
import {
  ArtifactNameSchema,
  CreateSandboxMessageSchema,
  ExecReplySchema,
  PutFilesMessageSchema,
} from '@troupe/node-agent';

const message = (err: unknown) => (err as Error).message;

describe('sandbox actor messages', () => {
  test('create takes a spec without labels, with the policy defaults', () => {
    const m = parseWith(CreateSandboxMessageSchema, {
      spec: {
        image: 'troupe-busybox:latest',
        files: { 'a.txt': 'x', 'b.bin': { base64: 'AAE=' } },
      },
    });
    expect(m.spec).toMatchObject({ network: 'none', user: '1000:1000', readOnlyRoot: true });
    expect(() =>
      parseWith(
        CreateSandboxMessageSchema,
        { spec: { image: 'x', labels: { actor: 'me' } } },
        { prefix: 'create' },
      ),
    ).toThrow(/create\.spec\.labels: is set by the node agent/);
    expect(() =>
      parseWith(
        CreateSandboxMessageSchema,
        { spec: { image: 'x', memoryMb: 1 } },
        { prefix: 'create' },
      ),
    ).toThrow(/create\.spec\.memoryMb/);
    expect(() =>
      parseWith(
        CreateSandboxMessageSchema,
        { spec: { image: 'x' }, jobId: 'a b' },
        { prefix: 'create' },
      ),
    ).toThrow(/create\.jobId: must match/);
  });

  test('putFiles takes exactly one of files and artifact', () => {
    const p = (v: unknown) => parseWith(PutFilesMessageSchema, v, { prefix: 'putFiles' });
    expect(p({ destDir: '/workspace', files: { a: 'x' } }).files).toEqual({ a: 'x' });
    expect(p({ destDir: '/workspace', artifact: 'jobs/j1/in.tar' }).artifact).toBe(
      'jobs/j1/in.tar',
    );
    let err: unknown;
    try {
      p({ destDir: '/workspace' });
    } catch (e) {
      err = e;
    }
    expect(message(err)).toBe('putFiles.files: give exactly one of files and artifact');
    expect(() => p({ destDir: '/w', files: {}, artifact: 'a' })).toThrow(/exactly one/);
    expect(() => p({ destDir: '/w', files: { a: { base64: 'not base64!' } } })).toThrow(
      /putFiles\.files\.a\.base64: must be base64/,
    );
  });

  test('artifact names are relative slash-separated segments', () => {
    for (const ok of ['a', 'jobs/j1/tasks/t-1/workspace.tar', 'x/.hidden', 'a_b/c-d.e']) {
      expect(ArtifactNameSchema.safeParse(ok).success).toBe(true);
    }
    for (const bad of ['', '/abs', 'a//b', 'a/', 'a/../b', './a', 'sp ace', 'x'.repeat(513)]) {
      expect(ArtifactNameSchema.safeParse(bad).success).toBe(false);
    }
  });

  test('an exec reply is checked field by field; fields it does not know pass through', () => {
    const reply = {
      exitCode: 137,
      stdout: 'out',
      stderr: '',
      stdoutDroppedBytes: 0,
      stderrDroppedBytes: 12,
      timedOut: true,
      durationMs: 300.5,
    };
    expect(ExecReplySchema.parse({ ...reply, oomKilled: false, extra: 1 })).toEqual({
      ...reply,
      oomKilled: false,
      extra: 1,
    });
    expect(() =>
      parseWith(ExecReplySchema, { ...reply, timedOut: 'yes' }, { prefix: 'exec' }),
    ).toThrow(/exec\.timedOut/);
    const { stdoutDroppedBytes: _dropped, ...partial } = reply;
    expect(() => parseWith(ExecReplySchema, partial, { prefix: 'exec' })).toThrow(
      /exec\.stdoutDroppedBytes/,
    );
  });
});
