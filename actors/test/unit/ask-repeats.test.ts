import {
  AskRepeats,
  MAX_REMEMBERED_ANSWER_BYTES,
  MAX_REMEMBERED_ASKS,
} from '../../src/internal/ask-repeats';
import { type Respondable } from '../../src/internal/core-item';

/** A responder that records what it was answered. */
function responder(): Respondable & { answers: (Uint8Array | undefined)[] } {
  const answers: (Uint8Array | undefined)[] = [];
  return {
    reply: 'inbox',
    answers,
    respond: (data) => {
      answers.push(data);
      return true;
    },
  };
}

test('a repeat waits for the first answer; a later one gets it at once', () => {
  const repeats = new AskRepeats();
  const first = responder();
  const queued = repeats.admit('a', Date.now() + 5_000, first)!;
  const waiting = responder();
  expect(repeats.admit('a', Date.now() + 5_000, waiting)).toBeUndefined();
  expect(waiting.answers).toEqual([]);
  queued.respond(Buffer.from('42'));
  expect(first.answers).toEqual([Buffer.from('42')]);
  expect(waiting.answers).toEqual([Buffer.from('42')]);
  const late = responder();
  expect(repeats.admit('a', Date.now() + 5_000, late)).toBeUndefined();
  expect(late.answers).toEqual([Buffer.from('42')]);
});

test(`at most ${MAX_REMEMBERED_ASKS} asks are remembered, the oldest forgotten first`, () => {
  const repeats = new AskRepeats();
  for (let i = 0; i < MAX_REMEMBERED_ASKS + 10; i++) {
    repeats.admit(`ask-${i}`, Date.now() + 5_000, responder())!.respond(Buffer.from('x'));
  }
  expect(repeats.size).toBe(MAX_REMEMBERED_ASKS);
  // The first is forgotten: a repeat of it is queued (runs) again; the last is still known.
  expect(repeats.admit('ask-0', Date.now() + 5_000, responder())).toBeDefined();
  expect(repeats.admit(`ask-${MAX_REMEMBERED_ASKS + 9}`, Date.now(), responder())).toBeUndefined();
});

test('answers past the byte limit are forgotten, oldest first', () => {
  const repeats = new AskRepeats();
  const big = Buffer.alloc(Math.ceil(MAX_REMEMBERED_ANSWER_BYTES / 2) + 1);
  repeats.admit('one', Date.now() + 5_000, responder())!.respond(big);
  repeats.admit('two', Date.now() + 5_000, responder())!.respond(big);
  repeats.admit('three', Date.now() + 5_000, responder());
  expect(repeats.admit('one', Date.now() + 5_000, responder())).toBeDefined();
  expect(repeats.admit('two', Date.now() + 5_000, responder())).toBeUndefined();
});
