import { createHash } from 'node:crypto';
import { DriverRegistry, type JobDriver, type JobSpec, readTaskFile } from '@troupe/coordinator';
import { invalidArgument, TroupeError } from '@troupe/proto';
import { receiveTaskFile } from '../../src/jobs/task-file';

// Task files (`tasks: {file, upload}`): the upload's intake, the line-by-line read and the
// registry's check of a spec naming one. The gRPC path and a job run from a file are in
// client/test/integration (jobs-sdk, cli).

/** A driver whose tasks are `{id, n}` and that takes task files. */
const counting: JobDriver = {
  name: 'counting',
  description: 'test driver',
  validate() {},
  plan: () => [],
  taskFile: {
    checker: () => (value, field) => {
      const v = value as { id?: unknown; n?: unknown };
      if (typeof v !== 'object' || v === null) throw invalidArgument(field, 'must be a mapping');
      if (typeof v.id !== 'string') throw invalidArgument(`${field}.id`, 'must be a string');
      if (typeof v.n !== 'number') throw invalidArgument(`${field}.n`, 'must be a number');
      return { id: v.id, n: v.n };
    },
    plan: (_spec, tasks) => tasks.map((t) => ({ id: t.id, input: t })),
  },
  runTask: async () => ({}),
  grade: async () => ({ passed: true }),
};

const checker = counting.taskFile!.checker({} as JobSpec);
const bytes = (text: string) => new TextEncoder().encode(text);

async function rejection(p: Promise<unknown>): Promise<TroupeError> {
  try {
    await p;
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a rejection');
}

async function* chunksOf(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield bytes(p);
}

describe('readTaskFile', () => {
  test('reads one task a line, skipping blank lines and accepting CRLF', async () => {
    const tasks = await readTaskFile(
      bytes('{"id":"a","n":1}\r\n\n   \n{"id":"b","n":2}\n'),
      checker,
    );
    expect(tasks).toEqual([
      { id: 'a', n: 1 },
      { id: 'b', n: 2 },
    ]);
  });

  test('a line that is not JSON is named by its number', async () => {
    const err = await rejection(readTaskFile(bytes('{"id":"a","n":1}\n\n{"id":"b",\n'), checker));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/^`spec\.tasks\.file:3`: is not valid JSON/);
  });

  test("the driver's check names the line and the field", async () => {
    const err = await rejection(
      readTaskFile(bytes('{"id":"a","n":1}\n{"id":"b","n":"two"}\n'), checker),
    );
    expect(err.message).toBe('`spec.tasks.file:2.n`: must be a number');
  });

  test('an id on two lines names both', async () => {
    const err = await rejection(
      readTaskFile(bytes('{"id":"a","n":1}\n{"id":"b","n":2}\n\n{"id":"a","n":3}\n'), checker),
    );
    expect(err.message).toMatch(/^`spec\.tasks\.file:4\.id`: must be unique \(line 1 has it too\)/);
  });

  test('more tasks than allowed, a blank file and bytes that are not UTF-8 are refused', async () => {
    const three = bytes('{"id":"a","n":1}\n{"id":"b","n":2}\n{"id":"c","n":3}\n');
    expect((await rejection(readTaskFile(three, checker, { maxTasks: 2 }))).message).toMatch(
      /^`spec\.tasks\.file:3`: a job holds at most 2 tasks/,
    );
    expect((await rejection(readTaskFile(bytes('\n \n'), checker))).message).toMatch(
      /^`spec\.tasks\.file`: holds no task/,
    );
    expect(
      (await rejection(readTaskFile(new Uint8Array([0x7b, 0xff, 0x7d]), checker))).message,
    ).toMatch(/^`spec\.tasks\.file`: must be UTF-8/);
  });

  test('a line deeper than the limit is refused naming it', async () => {
    const deep = `${'['.repeat(200)}${']'.repeat(200)}`;
    const err = await rejection(readTaskFile(bytes(`{"id":"a","n":1}\n${deep}\n`), checker));
    expect(err.message).toMatch(/^`spec\.tasks\.file:2`: must nest/);
  });

  test('20,000 lines are read without holding the event loop for the whole read', async () => {
    const text = Array.from({ length: 20_000 }, (_, i) => `{"id":"t${i}","n":${i}}`).join('\n');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    try {
      const tasks = await readTaskFile(bytes(text), checker);
      expect(tasks).toHaveLength(20_000);
      expect(tasks[19_999]).toEqual({ id: 't19999', n: 19_999 });
    } finally {
      clearInterval(timer);
    }
    // 40 slices of 500 lines: a timer ran between some of them.
    expect(ticks).toBeGreaterThan(0);
  });
});

describe('receiveTaskFile', () => {
  test('hashes the bytes across chunks and counts the tasks', async () => {
    const text = '{"id":"a","n":1}\n\n{"id":"b","n":2}\n';
    const got = await receiveTaskFile(chunksOf(text.slice(0, 5), text.slice(5)));
    expect(got.upload).toBe(`sha256:${createHash('sha256').update(text).digest('hex')}`);
    expect(got.lines).toBe(2);
    expect(Buffer.from(got.bytes).toString()).toBe(text);
  });

  test('refuses a file over the limit as soon as it is exceeded', async () => {
    let pulled = 0;
    async function* endless(): AsyncGenerator<Uint8Array> {
      for (;;) {
        pulled++;
        yield bytes('{"id":"a"}\n'.repeat(100));
      }
    }
    const err = await rejection(receiveTaskFile(endless(), 10_000));
    expect(err.message).toBe('`chunks`: a task file must be at most 10000 bytes');
    expect(pulled).toBe(10); // 1,100 bytes a chunk: the tenth crosses 10,000
  });

  test('refuses bytes that are not UTF-8, and a file without a task', async () => {
    async function* bad(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array([0xc3, 0x28]);
    }
    expect((await rejection(receiveTaskFile(bad()))).message).toMatch(/must be UTF-8/);
    expect((await rejection(receiveTaskFile(chunksOf('\n\n')))).message).toMatch(/holds no task/);
  });
});

describe('DriverRegistry.validate with a task file', () => {
  const registry = new DriverRegistry().register(counting).register({
    ...counting,
    name: 'listing',
    taskFile: undefined,
  } as JobDriver);
  const upload = `sha256:${'a'.repeat(64)}`;
  const files = new Map([[upload, bytes('{"id":"a","n":1}\n{"id":"b"}\n')]]);
  const readTaskFileOf = async (u: string) => files.get(u);

  test('checks every line of the stored file', async () => {
    const err = await rejection(
      registry.validate(
        { kind: 'counting', tasks: { file: 'tasks.jsonl', upload } },
        { readTaskFile: readTaskFileOf },
      ),
    );
    expect(err.message).toBe('`spec.tasks.file:2.n`: must be a number');
  });

  test('names the upload missing from the spec, or from the store', async () => {
    const missing = await rejection(
      registry.validate(
        { kind: 'counting', tasks: { file: 'tasks.jsonl' } },
        { readTaskFile: readTaskFileOf },
      ),
    );
    expect(missing.message).toMatch(/^spec\.tasks\.upload: is required: the client uploads/);
    const unknown = await rejection(
      registry.validate(
        { kind: 'counting', tasks: { file: 'tasks.jsonl', upload: `sha256:${'b'.repeat(64)}` } },
        { readTaskFile: readTaskFileOf },
      ),
    );
    expect(unknown.message).toMatch(/^`spec\.tasks\.upload`: names no task file stored/);
    const extra = await rejection(
      registry.validate(
        { kind: 'counting', tasks: { file: 'tasks.jsonl', upload, count: 3 } },
        { readTaskFile: readTaskFileOf },
      ),
    );
    expect(extra.code).toBe('INVALID_ARGUMENT');
    expect(extra.message).toMatch(/^spec\.tasks.*count/);
  });

  test('a driver without task files is named', async () => {
    const err = await rejection(
      registry.validate(
        { kind: 'listing', tasks: { file: 'tasks.jsonl', upload } },
        { readTaskFile: readTaskFileOf },
      ),
    );
    expect(err.message).toMatch(/^`spec\.tasks\.file`: the listing driver takes no task files/);
    expect(err).toBeInstanceOf(TroupeError);
  });
});
