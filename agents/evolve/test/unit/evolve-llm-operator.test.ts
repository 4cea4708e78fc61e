import { extractFirstCodeBlock } from '../../src/extract-code-block';
import { type ChatFunction, LlmOperator } from '../../src/llm-operator';
import { type OperatorChatMessage } from '../../src/operator-prompts';
import { SeededRng } from '../../src/seeded-rng';

function scripted(replies: string[]): { chat: ChatFunction; calls: OperatorChatMessage[][] } {
  const calls: OperatorChatMessage[][] = [];
  const chat: ChatFunction = async (messages) => {
    calls.push(messages);
    const next = replies.shift();
    if (next === undefined) throw new Error('script ran out');
    return { text: next, costUsd: 0.01 };
  };
  return { chat, calls };
}

const ctx = () => ({
  rng: SeededRng.fromKey('t'),
  signal: new AbortController().signal,
  seeds: [{ language: 'python', source: 'print(1)\n' }],
  generation: 0,
  stepScale: 1,
});
const buggy = {
  nodeId: 'n1',
  program: { language: 'python', source: 'print(undefined_name)\n' },
  result: {
    status: 'error' as const,
    score: null,
    signature: [],
    metrics: { reason: 'exit 1' },
    stderrTail: "NameError: name 'undefined_name' is not defined",
    evalMs: 12,
    evaluatorVersion: 'x/1',
  },
};

describe('extractFirstCodeBlock', () => {
  it('takes the first fenced block, with or without a language tag', () => {
    expect(extractFirstCodeBlock('Plan.\n```python\na = 1\n```\n```\nb = 2\n```')).toBe('a = 1');
    expect(extractFirstCodeBlock('~~~\nx\n~~~')).toBe('x');
    expect(extractFirstCodeBlock('````py\nq = "```"\n````')).toBe('q = "```"');
    expect(extractFirstCodeBlock('```python\ncut off')).toBe('cut off');
    expect(extractFirstCodeBlock('no code')).toBeUndefined();
  });
});

describe('LlmOperator', () => {
  it('Draft shows the seeds and returns the code block with its cost', async () => {
    const { chat, calls } = scripted(['Idea.\n```python\nprint(2)\n```\nDone.']);
    const op = new LlmOperator({ chat, description: 'Print a number.', direction: 'maximise' });
    const p = await op.draft(ctx());
    expect(p).toEqual({ program: { language: 'python', source: 'print(2)\n' }, costUsd: 0.01 });
    expect(calls[0]?.[0]?.role).toBe('system');
    expect(calls[0]?.[0]?.content).toContain('higher scores are better');
    expect(calls[0]?.[1]?.content).toContain('Print a number.');
    expect(calls[0]?.[1]?.content).toContain('print(1)');
  });

  it('Debug shows the failing program, its status and stderr', async () => {
    const { chat, calls } = scripted(['```python\nprint(0)\n```']);
    const op = new LlmOperator({ chat, direction: 'minimise' });
    await op.debug(buggy, ctx());
    const prompt = calls[0]?.[1]?.content ?? '';
    expect(prompt).toContain('failed evaluation');
    expect(prompt).toContain('undefined_name');
    expect(prompt).toContain('Status: error');
    expect(calls[0]?.[0]?.content).toContain('lower scores are better');
  });

  it('Improve and Crossover show their parents with scores', async () => {
    const scored = { ...buggy, result: { ...buggy.result, status: 'ok' as const, score: 3.5 } };
    const { chat, calls } = scripted(['```\na\n```', '```\nb\n```']);
    const op = new LlmOperator({ chat, direction: 'maximise' });
    await op.improve(scored, ctx());
    await op.crossover(scored, { ...scored, nodeId: 'n2' }, ctx());
    expect(calls[0]?.[1]?.content).toContain('Score: 3.5');
    expect(calls[1]?.[1]?.content).toContain('Program 2:');
  });

  it('a reply without code is an operator failure that still reports its cost', async () => {
    const { chat } = scripted(['I cannot help with that.']);
    const op = new LlmOperator({ chat, direction: 'maximise' });
    await expect(op.draft(ctx())).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { costUsd: 0.01 },
    });
  });

  it('passes the abort signal to the chat function', async () => {
    const seen: AbortSignal[] = [];
    const op = new LlmOperator({
      chat: async (_m, { signal }) => {
        seen.push(signal);
        return '```\nx\n```';
      },
      direction: 'maximise',
    });
    const c = ctx();
    await op.draft(c);
    expect(seen[0]).toBe(c.signal);
  });
});
