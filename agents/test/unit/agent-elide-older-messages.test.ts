import { type StoredMessage } from '../../src/agent/agent-state';
import {
  ELIDED_PREFIX,
  elideOlderMessages,
  growingChars,
  stateBytes,
} from '../../src/agent/elide-older-messages';

const big = (c: string) => c.repeat(1_000);

function conversation(): StoredMessage[] {
  return [
    { role: 'system', content: big('s'), pinned: true },
    { role: 'user', content: big('t'), pinned: true },
    {
      role: 'assistant',
      content: big('a'),
      toolCalls: [{ id: 'c1', name: 'x', argumentsText: '{}' }],
    },
    { role: 'tool', toolCallId: 'c1', content: big('r') },
    { role: 'user', content: big('m') },
    {
      role: 'assistant',
      content: big('b'),
      toolCalls: [{ id: 'c2', name: 'x', argumentsText: '{}' }],
    },
    { role: 'tool', toolCallId: 'c2', content: big('q') },
  ];
}

test('elides tool results first, oldest first, and stops once enough is freed', () => {
  const messages = conversation();
  const r = elideOlderMessages(messages, 's1', 500);
  expect(r.elided).toBe(1);
  expect(r.freedChars).toBeGreaterThanOrEqual(500);
  expect(messages[3]?.content).toMatch(
    /^\[elided to keep the session state small: 1000 characters/,
  );
  expect(messages[3]?.content).toContain('tool_result event of call c1');
  expect(messages[2]?.content).toBe(big('a'));
});

test('never touches system, pinned, the last assistant message or what follows it; never twice', () => {
  const messages = conversation();
  const r = elideOlderMessages(messages, 's1', 1e9);
  expect(r.elided).toBe(3); // tool c1, then the assistant c1 and the user message
  expect(messages.map((m) => m.content?.startsWith(ELIDED_PREFIX))).toEqual([
    false,
    false,
    true,
    true,
    true,
    false,
    false,
  ]);
  // Tool calls stay paired with their results.
  expect(messages[2]).toMatchObject({ toolCalls: [{ id: 'c1' }] });
  expect(elideOlderMessages(messages, 's1', 1e9).elided).toBe(0);
});

test('stateBytes measures the JSON; growingChars counts message and inbound text', () => {
  const state = {
    messages: conversation(),
    inbound: [{ role: 'user' as const, content: 'hé' }],
    eventSeq: 1,
    subagents: {},
    runsDone: 0,
  };
  expect(stateBytes(state)).toBe(Buffer.byteLength(JSON.stringify(state)));
  expect(growingChars(state)).toBe(7_000 + 4 + 2);
});
