import { parseWith } from '@troupe/proto';
import { ExecMessageSchema } from '@troupe/node-agent';

// A NUL in an argv entry made the sandbox's spawn throw, answered INTERNAL; the exec message
// now refuses it as INVALID_ARGUMENT naming the entry.
test('exec refuses a NUL character in the command, naming cmd', () => {
  for (const cmd of ['echo a\u0000b', ['cat', '--', 'seed.txt\u0000.png']]) {
    let err: unknown;
    try {
      parseWith(ExecMessageSchema, { cmd });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((err as Error).message).toMatch(/cmd/);
  }
  expect(parseWith(ExecMessageSchema, { cmd: ['echo', 'ok'] }).cmd).toEqual(['echo', 'ok']);
});
