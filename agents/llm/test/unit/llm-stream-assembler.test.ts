import { MalformedResponseError } from '../../src/internal/malformed-response-error';
import { StreamAssembler } from '../../src/internal/stream-assembler';

const chunk = (delta: object, finish: string | null = null): object => ({
  choices: [{ index: 0, delta, finish_reason: finish }],
});

describe('StreamAssembler', () => {
  it('gathers interleaved tool-call pieces by index and takes usage from the last chunk', () => {
    const asm = new StreamAssembler('req1');
    asm.push(chunk({ role: 'assistant', content: null }), 1);
    asm.push(
      chunk({ tool_calls: [{ index: 0, id: 'a', function: { name: 'f', arguments: '{"x"' } }] }),
      1,
    );
    asm.push(chunk({ tool_calls: [{ index: 1, function: { name: 'g', arguments: '' } }] }), 1);
    asm.push(chunk({ tool_calls: [{ index: 0, function: { arguments: ': 1}' } }] }), 1);
    const deltas = asm.push(
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{' } }] }, 'tool_calls'),
      1,
    );
    expect(deltas).toEqual([{ kind: 'tool_call', index: 1, argumentsText: '{', attempt: 1 }]);
    asm.push(
      { choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } },
      1,
    );
    expect(asm.finish()).toEqual({
      content: null,
      toolCalls: [
        { id: 'a', name: 'f', argumentsText: '{"x": 1}' },
        { id: 'call_req1_1', name: 'g', argumentsText: '{' },
      ],
      finishReason: 'tool_calls',
      usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
      providerModel: undefined,
    });
  });

  it('accepts whole tool calls without an index and object arguments', () => {
    const asm = new StreamAssembler('r');
    asm.push(
      chunk(
        {
          tool_calls: [
            { id: 'x', function: { name: 'a', arguments: { k: 1 } } },
            { id: 'y', function: { name: 'b', arguments: '{}' } },
          ],
        },
        'tool_calls',
      ),
      1,
    );
    expect(asm.finish().toolCalls.map((c) => c.argumentsText)).toEqual(['{"k":1}', '{}']);
  });

  it('refuses a stream that ended without a finish reason or with a nameless tool call', () => {
    const cut = new StreamAssembler('r');
    cut.push(chunk({ content: 'partial' }), 1);
    expect(cut.generatedChars).toBe(7);
    expect(() => cut.finish()).toThrow(MalformedResponseError);
    const nameless = new StreamAssembler('r');
    nameless.push(
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }, 'tool_calls'),
      1,
    );
    expect(() => nameless.finish()).toThrow('has no function name');
    expect(() => new StreamAssembler('r').push('nope', 1)).toThrow(MalformedResponseError);
  });
});
