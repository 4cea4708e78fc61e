import { completeUtf8Length, StreamLog } from '../../src/internal/stream-log';

// The offset-addressed stdout of an interactive task: reads by offset, whole UTF-8 characters,
// a bounded window, waits that end on new bytes or the end.

test('reads by offset and holds back a split UTF-8 character until it is whole', async () => {
  const log = new StreamLog(1024);
  const euro = Buffer.from('€'); // 3 bytes
  log.write(Buffer.concat([Buffer.from('a'), euro.subarray(0, 2)]));
  const first = await log.read(0, { waitMs: 0, maxBytes: 100 });
  expect(first).toMatchObject({ offset: 0, nextOffset: 1 });
  expect(first.data.toString()).toBe('a');
  log.write(euro.subarray(2));
  const second = await log.read(first.nextOffset, { waitMs: 0, maxBytes: 100 });
  expect(second.data.toString()).toBe('€');
  expect(second.nextOffset).toBe(4);
  expect(completeUtf8Length(Buffer.from('ab'))).toBe(2);
  expect(completeUtf8Length(euro.subarray(0, 1))).toBe(0);
});

test('a wait ends when bytes arrive, and at once after the end', async () => {
  const log = new StreamLog(1024);
  const pending = log.read(0, { waitMs: 10_000, maxBytes: 100 });
  log.write(Buffer.from('x\n'));
  expect((await pending).data.toString()).toBe('x\n');
  log.close();
  const started = performance.now();
  const after = await log.read(2, { waitMs: 10_000, maxBytes: 100 });
  expect(after.data.length).toBe(0);
  expect(performance.now() - started).toBeLessThan(5_000);
});

test('keeps a bounded window: a read of dropped bytes starts at the oldest kept', async () => {
  const log = new StreamLog(8);
  for (const chunk of ['aaaa', 'bbbb', 'cccc']) log.write(Buffer.from(chunk));
  const r = await log.read(0, { waitMs: 0, maxBytes: 100 });
  expect(r).toMatchObject({ offset: 4, nextOffset: 12 });
  expect(r.data.toString()).toBe('bbbbcccc');
});
