import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import { completionChunks, resolveCompletion } from '../../src/internal/chat-wire';

const body: ChatCompletionCreateParams = {
  model: 'm-1',
  messages: [{ role: 'user', content: 'x'.repeat(40) }],
};
const ids = { completionId: 'chatcmpl-1', nextToolCallId: () => 'call_gen' };

describe('chat wire format', () => {
  it('defaults finish reason, model and estimated usage', () => {
    const c = resolveCompletion(
      { content: 'abcdefgh', toolCalls: [{ name: 'f', arguments: { a: 1 } }] },
      body,
      ids,
    );
    expect(c.model).toBe('m-1');
    expect(c.finishReason).toBe('tool_calls');
    expect(c.toolCalls).toEqual([{ id: 'call_gen', name: 'f', arguments: '{"a":1}' }]);
    // 40 prompt chars -> 10 tokens; 8 + 1 + 7 completion chars -> 4 tokens.
    expect(c.usage).toEqual({ prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 });
    expect(resolveCompletion({ content: 'hi' }, body, ids).finishReason).toBe('stop');
  });

  it('streams content and arguments in pieces that concatenate back, usage last', () => {
    const c = resolveCompletion(
      {
        content: 'Hello, world',
        toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"q":"abc"}' }],
      },
      body,
      ids,
    );
    const chunks = completionChunks(c, 5, true);
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta));
    expect(deltas[0]?.role).toBe('assistant');
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Hello, world');
    const args = deltas.flatMap((d) => d.tool_calls ?? []).map((t) => t.function?.arguments ?? '');
    expect(args.join('')).toBe('{"q":"abc"}');
    expect(args.filter((a) => a.length > 0).length).toBeGreaterThan(1);
    const last = chunks[chunks.length - 1]!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(c.usage);
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
    expect(chunks[chunks.length - 2]!.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('omits usage entirely without include_usage', () => {
    const chunks = completionChunks(resolveCompletion({ content: 'hi' }, body, ids), 4, false);
    expect(chunks.every((chunk) => !('usage' in chunk))).toBe(true);
    expect(chunks.every((chunk) => chunk.choices.length === 1)).toBe(true);
  });
});
