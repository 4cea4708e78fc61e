import { computeCostUsd } from '../../src/compute-cost-usd';
import { estimatePromptTokens, estimateTextTokens } from '../../src/estimate-tokens';

describe('token estimates', () => {
  it('counts ASCII at 4 characters a token and other characters as one token each', () => {
    expect(estimateTextTokens('')).toBe(0);
    expect(estimateTextTokens('abcd')).toBe(1);
    expect(estimateTextTokens('abcde')).toBe(2);
    expect(estimateTextTokens('日本語')).toBe(3);
    expect(estimateTextTokens('ab日本')).toBe(3);
  });

  it('adds per-message framing, tool calls and tool definitions', () => {
    const base = estimatePromptTokens([{ role: 'user', content: 'abcd' }], undefined);
    expect(base).toBe(3 + 4 + 1);
    const withCall = estimatePromptTokens(
      [
        { role: 'user', content: 'abcd' },
        {
          role: 'assistant',
          content: null,
          toolCalls: [{ id: 'c', name: 'read', argumentsText: '{"a":1}' }],
        },
      ],
      undefined,
    );
    expect(withCall).toBe(base + 4 + 3 + 1 + 2);
    const tools = [{ name: 'read', parameters: { type: 'object' } }];
    expect(estimatePromptTokens([{ role: 'user', content: 'abcd' }], tools)).toBe(
      base + Math.ceil(JSON.stringify(tools).length / 4),
    );
  });

  it('counts the text parts of a multi-part turn and a fixed amount per image', () => {
    const text = estimatePromptTokens([{ role: 'user', content: 'abcd' }], undefined);
    const parts = estimatePromptTokens(
      [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'abcd' },
            { type: 'image', url: 'data:image/png;base64,AAAA' },
            { type: 'image', url: 'data:image/png;base64,BBBB' },
          ],
        },
      ],
      undefined,
    );
    expect(parts).toBe(text + 2 * 765);
  });

  it('prices tokens per million', () => {
    expect(computeCostUsd({ inputUsdPer1M: 3, outputUsdPer1M: 15 }, 1_000_000, 2_000)).toBeCloseTo(
      3.03,
      12,
    );
  });
});
