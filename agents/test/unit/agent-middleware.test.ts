import type { ToolCall } from '@troupe/llm';
import { parseAgentTemplate } from '../../src/agent/agent-template';
import type { RunningSession, StoredMessage } from '../../src/agent/agent-state';
import { buildMiddlewareChain, middlewareProblem } from '../../src/agent/middleware/build-chain';
import { callSignature } from '../../src/agent/middleware/conversation-calls';
import { doomLoop, replySimilarity } from '../../src/agent/middleware/doom-loop';
import { type MiddlewareContext, MiddlewareChain } from '../../src/agent/middleware/middleware';
import { readBeforeEdit } from '../../src/agent/middleware/read-before-edit';

const models = { has: (n: string) => n === 'm', names: () => ['m'] };

function session(messages: StoredMessage[]): RunningSession {
  return {
    template: parseAgentTemplate({ name: 'a', instruction: 'x', model: 'm' }),
    run: {
      runId: 'r',
      status: 'running',
      startedAtMs: 0,
      steps: 0,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
      continues: 0,
    },
    messages,
    eventSeq: 0,
    subagents: {},
    runsDone: 0,
  };
}

function ctx(messages: StoredMessage[]): MiddlewareContext {
  return {
    session: session(messages),
    signal: new AbortController().signal,
    chat: () => Promise.reject(new Error('no model in unit tests')),
  };
}

const tc = (id: string, name: string, args: unknown): ToolCall => ({
  id,
  name,
  argumentsText: JSON.stringify(args),
});
const asked = (...calls: ToolCall[]): StoredMessage => ({
  role: 'assistant',
  content: null,
  toolCalls: calls,
});
const answered = (id: string, content: string): StoredMessage => ({
  role: 'tool',
  toolCallId: id,
  content,
});

describe('doom_loop', () => {
  const loop = doomLoop({ use: 'doom_loop', repeats: 3, action: 'stop', similarity: 0.9 });

  test('the same failing call counts across replies; a success or another call breaks the streak', () => {
    const view = (id: string) => tc(id, 'view_file', { path: 'x' });
    const failing = [
      asked(view('1')),
      answered('1', 'error: no such file'),
      asked(view('2')),
      answered('2', 'error: no such file'),
    ];
    const third = view('3');
    expect(
      loop.afterTool!(ctx([...failing, asked(third)]), third, { ok: false, content: 'error: x' }),
    ).toEqual({ stop: 'doom loop: made the same failing call view_file 3 times in a row' });
    // The same call succeeding is not a loop.
    expect(
      loop.afterTool!(ctx([...failing, asked(third)]), third, { ok: true, content: 'fine' }),
    ).toBeUndefined();
    // A different call in between breaks the streak.
    const other = tc('o', 'view_file', { path: 'y' });
    const broken = [
      failing[0]!,
      failing[1]!,
      asked(other),
      answered('o', 'error: no'),
      ...failing.slice(2),
    ];
    expect(
      loop.afterTool!(ctx([...broken, asked(third)]), third, { ok: false, content: 'error: x' }),
    ).toBeUndefined();
  });

  test('a repeat inside one reply counts the calls before it, not the ones after', () => {
    const calls = ['1', '2', '3'].map((id) => tc(id, 'view_file', { path: 'x' }));
    const later = tc('4', 'run_terminal_command', { command: 'ls' });
    const messages = [asked(...calls, later), answered('1', 'error: a'), answered('2', 'error: b')];
    expect(
      loop.afterTool!(ctx(messages), calls[2]!, { ok: false, content: 'error: c' }),
    ).toMatchObject({ stop: expect.stringContaining('3 times') });
  });

  test('argument order does not make a different call', () => {
    expect(callSignature({ name: 't', argumentsText: '{"a":1,"b":[{"y":2,"x":1}]}' })).toBe(
      callSignature({ name: 't', argumentsText: '{"b":[{"x":1,"y":2}],"a":1}' }),
    );
  });

  test('near-identical texts in a row are a loop; a reply without text breaks it', () => {
    const say = (content: string): StoredMessage => ({ role: 'assistant', content });
    const a = 'I will now check the configuration file and then run the tests again to see.';
    const b = 'I will now check the configuration file and then run the tests again to see!';
    expect(replySimilarity(a, b)).toBeGreaterThan(0.9);
    expect(replySimilarity(a, 'Something entirely different is happening in this reply now.')).toBe(
      0,
    );
    const hint = doomLoop({ use: 'doom_loop', repeats: 3, action: 'hint', similarity: 0.9 });
    const reply = say(a) as Extract<StoredMessage, { role: 'assistant' }>;
    expect(hint.afterModel!(ctx([say(b), say(a), reply]), reply)).toMatchObject({
      hint: expect.stringContaining('3 times in a row'),
    });
    expect(
      hint.afterModel!(ctx([say(b), asked(tc('1', 'x', {})), say(a), reply]), reply),
    ).toBeUndefined();
    // Again at the next multiple only.
    expect(hint.afterModel!(ctx([say(a), say(b), say(a), reply]), reply)).toBeUndefined();
  });
});

describe('read_before_edit', () => {
  const rule = readBeforeEdit();
  const edit = tc('e', 'edit_file', { path: 'src/a.ts', old_text: 'x', new_text: 'y' });

  test('refuses an edit of a file not viewed; a view or a write of the same path allows it', () => {
    expect(rule.beforeTool!(ctx([asked(edit)]), edit)).toEqual({
      block: expect.stringContaining('view src/a.ts with view_file before editing it'),
    });
    const viewed = [asked(tc('v', 'view_file', { path: './src/a.ts' })), answered('v', '1\tx')];
    expect(rule.beforeTool!(ctx([...viewed, asked(edit)]), edit)).toBeUndefined();
    const written = [
      asked(tc('w', 'write_file', { path: 'src/a.ts', content: 'x' })),
      answered('w', 'ok'),
    ];
    expect(rule.beforeTool!(ctx([...written, asked(edit)]), edit)).toBeUndefined();
  });

  test('a failed view or a view of another file does not count; other tools pass', () => {
    const failed = [asked(tc('v', 'view_file', { path: 'src/a.ts' })), answered('v', 'error: no')];
    expect(rule.beforeTool!(ctx([...failed, asked(edit)]), edit)).toHaveProperty('block');
    const other = [asked(tc('v', 'view_file', { path: 'src/b.ts' })), answered('v', '1\tx')];
    expect(rule.beforeTool!(ctx([...other, asked(edit)]), edit)).toHaveProperty('block');
    const ls = tc('l', 'run_terminal_command', { command: 'ls' });
    expect(rule.beforeTool!(ctx([asked(ls)]), ls)).toBeUndefined();
  });
});

describe('the chain', () => {
  test('rewrites feed the next hook; the first block wins and later hooks do not run', async () => {
    const seen: string[] = [];
    const chain = new MiddlewareChain([
      {
        name: 'upper',
        beforeTool: (_c, call) => ({ argumentsText: call.argumentsText.toUpperCase() }),
      },
      {
        name: 'guard',
        beforeTool: (_c, call) => {
          seen.push(call.argumentsText);
          return call.argumentsText.includes('RM') ? { block: 'no rm' } : undefined;
        },
      },
      { name: 'after', beforeTool: () => void seen.push('after') },
    ]);
    const d = await chain.beforeTool(ctx([]), tc('1', 'run_terminal_command', { command: 'rm x' }));
    expect(d.block).toEqual({ by: 'guard', reason: 'no rm' });
    expect(seen).toEqual(['{"COMMAND":"RM X"}']);
    expect(d.actions.map((a) => `${a.middleware}:${a.action}`)).toEqual([
      'upper:rewrite',
      'guard:block',
    ]);
  });

  test('after a tool: content rewrites chain, hints collect, a stop ends the chain', async () => {
    const chain = new MiddlewareChain([
      { name: 'a', afterTool: (_c, _call, o) => ({ content: `${o.content}+a` }) },
      { name: 'b', afterTool: () => ({ hint: 'look again' }) },
      { name: 'c', afterTool: (_c, _call, o) => ({ content: `${o.content}+c` }) },
      { name: 'd', afterTool: () => ({ stop: 'enough' }) },
      { name: 'e', afterTool: () => ({ content: 'never' }) },
    ]);
    const d = await chain.afterTool(ctx([]), tc('1', 't', {}), { ok: true, content: 'out' });
    expect(d).toMatchObject({
      content: 'out+a+c',
      hints: ['look again'],
      stop: { by: 'd', reason: 'enough' },
    });
  });
});

describe('checking a template against the host', () => {
  const template = (extra: object) =>
    parseAgentTemplate({ name: 'a', instruction: 'x', model: 'm', ...extra });

  test('unknown plugins, refused options and unregistered models are named', () => {
    const plugins = {
      strict: (o: Record<string, unknown>) => {
        if (o['n'] !== undefined && typeof o['n'] !== 'number')
          throw new Error('n: must be a number');
        return { name: 'strict' };
      },
    };
    expect(
      middlewareProblem(template({ middleware: [{ use: 'plugin', name: 'x' }] }), models, plugins),
    ).toBe(
      "`run.template.middleware[0].name`: this agent host offers no plugin 'x' (offered: strict)",
    );
    expect(
      middlewareProblem(
        template({
          middleware: [
            { use: 'read_before_edit' },
            { use: 'plugin', name: 'strict', options: { n: 'x' } },
          ],
        }),
        models,
        plugins,
      ),
    ).toBe('`run.template.middleware[1].options`: n: must be a number');
    expect(
      middlewareProblem(
        template({ middleware: [{ use: 'summarise_tool_output', model: 'big' }] }),
        models,
        {},
      ),
    ).toContain('`run.template.middleware[0].model`');
    expect(
      middlewareProblem(
        template({ continuation: { kind: 'model', model: 'big', instruction: 'u' } }),
        models,
        {},
      ),
    ).toContain('`run.template.continuation.model`');
    expect(
      middlewareProblem(
        template({ middleware: [{ use: 'plugin', name: 'strict' }] }),
        models,
        plugins,
      ),
    ).toBeUndefined();
    // `toString` is not a plugin just because every object has one.
    expect(
      middlewareProblem(
        template({ middleware: [{ use: 'plugin', name: 'tostring' }] }),
        models,
        {},
      ),
    ).toContain('offers no plugin');
    expect(
      buildMiddlewareChain(template({ middleware: [{ use: 'plugin', name: 'strict' }] }), plugins)
        .middleware[0]?.name,
    ).toBe('plugin:strict');
  });

  test('bad middleware entries are refused by the template schema, naming the field', () => {
    expect(() => template({ middleware: [{ use: 'doom_loop', repeats: 1 }] })).toThrow(
      /template\.middleware\.0\.repeats|template\.middleware\[0\]\.repeats/,
    );
    expect(() => template({ middleware: [{ use: 'teleport' }] })).toThrow(/template\.middleware/);
  });
});
