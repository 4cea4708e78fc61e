import { errorCode } from '@troupe/proto';
import { LlmClient, ModelRegistry } from '@troupe/llm';
import { createAgentActor } from '../../src/agent/agent-actor';
import type { StoredMessage } from '../../src/agent/agent-state';
import { parseAgentTemplate } from '../../src/agent/agent-template';
import { AgentToolArgs, toolDefinition } from '../../src/agent/agent-tool-args';
import {
  applyCompaction,
  conversationChars,
  findCompactionWindow,
} from '../../src/agent/compact-history';
import { headTail, replaceExact } from '../../src/agent/replace-exact';
import { SessionBudget } from '../../src/agent/session-budget';
import type { TrajectoryEvent } from '../../src/agent/trajectory-event';
import { trajectoryToRecord } from '../../src/agent/trajectory-jsonl';
import { latestPerSeq, type TrajectoryStore } from '../../src/agent/trajectory-store';

describe('replaceExact', () => {
  it('replaces the one occurrence', () => {
    expect(replaceExact('a b c', 'b', 'B', 'f')).toBe('a B c');
  });
  it('names not found and ambiguous matches with their lines', () => {
    expect(() => replaceExact('a\nb', 'z', 'y', 'f.txt')).toThrow(
      /`old_text`: not found in f\.txt/,
    );
    expect(() => replaceExact('x\ny\nx', 'x', 'y', 'f.txt')).toThrow(
      /ambiguous, found 2 times in f\.txt \(lines 1, 3\)/,
    );
  });
  it('headTail keeps both ends and says what it dropped', () => {
    const out = headTail('a'.repeat(500) + 'b'.repeat(500), 200);
    expect(out.startsWith('aaa')).toBe(true);
    expect(out.endsWith('bbb')).toBe(true);
    expect(out).toMatch(/\[860 characters omitted\]/);
    expect(headTail('short', 200)).toBe('short');
  });
});

describe('parseAgentTemplate', () => {
  it('fills defaults', () => {
    const t = parseAgentTemplate({ name: 'coder', instruction: 'x', model: 'gpt-4o' });
    expect(t).toMatchObject({ tools: [], limits: { maxSteps: 50 }, maxAutoContinues: 0 });
  });
  it('names every bad field', () => {
    let err: unknown;
    try {
      parseAgentTemplate({
        name: 'Bad Name',
        instruction: '',
        model: 'gpt-4o',
        tools: ['rm_rf'],
        limits: { maxSteps: 0 },
        extra: 1,
      });
    } catch (e) {
      err = e;
    }
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    const msg = (err as Error).message;
    for (const field of [
      'template.name',
      'template.instruction',
      'template.tools[0]',
      'template.limits.maxSteps',
    ]) {
      expect(msg).toContain(field);
    }
    expect(msg).toMatch(/extra/);
  });
});

describe('tool arguments', () => {
  it('run_terminal_command needs a command to run and a job id to poll', () => {
    expect(AgentToolArgs.run_terminal_command.safeParse({ action: 'run' }).success).toBe(false);
    const poll = AgentToolArgs.run_terminal_command.safeParse({ action: 'poll' });
    expect(poll.success ? '' : poll.error.issues[0]?.path).toEqual(['job_id']);
    expect(AgentToolArgs.run_terminal_command.parse({ command: 'ls' })).toMatchObject({
      action: 'run',
      background: false,
      timeout_s: 120,
    });
  });
  it('definitions carry a JSON schema without $schema', () => {
    const d = toolDefinition('edit_file');
    expect(d.parameters).toMatchObject({
      type: 'object',
      required: ['path', 'old_text', 'new_text'],
    });
    expect(d.parameters['$schema']).toBeUndefined();
  });
});

describe('compaction', () => {
  const msgs: StoredMessage[] = [
    { role: 'system', content: 'sys', pinned: true },
    { role: 'user', content: 'TASK', pinned: true },
    {
      role: 'assistant',
      content: 'a'.repeat(300),
      toolCalls: [{ id: '1', name: 't', argumentsText: '{}' }],
    },
    { role: 'tool', toolCallId: '1', content: 'r'.repeat(300) },
    {
      role: 'assistant',
      content: 'b'.repeat(300),
      toolCalls: [{ id: '2', name: 't', argumentsText: '{}' }],
    },
    { role: 'tool', toolCallId: '2', content: 'r'.repeat(300) },
  ];
  it('cuts before an assistant message, never between a tool call and its result', () => {
    const w = findCompactionWindow(msgs, 400);
    expect(w).toEqual({ start: 1, end: 4 });
    expect(msgs[w?.end ?? 0]?.role).toBe('assistant');
  });
  it('keeps pinned messages verbatim and puts the summary in place of the window', () => {
    const out = applyCompaction(msgs, { start: 1, end: 4 }, 'SUM');
    expect(out.map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'tool']);
    expect(out[1]?.content).toBe('TASK');
    expect(out[2]?.content).toMatch(/^\[Summary of 2 earlier messages\]\nSUM$/);
    expect(conversationChars(out)).toBeLessThan(conversationChars(msgs));
  });
  it('finds no window when too little would be summarised', () => {
    expect(findCompactionWindow(msgs.slice(0, 3), 10)).toBeUndefined();
  });
});

describe('SessionBudget', () => {
  const ctx = { requestId: 'r', model: 'm', attempt: 1, signal: new AbortController().signal };
  it('refuses a reservation whose worst case would pass the cap, counting held ones', async () => {
    const b = new SessionBudget(0.1, 0.3, undefined);
    const r1 = await b.reserve({ usd: 0.1, tokens: 1 }, ctx);
    await b.reserve({ usd: 0.1, tokens: 1 }, ctx);
    await expect(b.reserve({ usd: 0.1, tokens: 1 }, ctx)).rejects.toMatchObject({
      code: 'BUDGET_EXHAUSTED',
    });
    await b.settle(r1.reservationId, { usd: 0.05, tokens: 1 });
    expect(b.spent).toBeCloseTo(0.15);
  });
  it('forwards to the outer ledger, which may refuse too', async () => {
    const calls: string[] = [];
    const b = new SessionBudget(0, undefined, {
      reserve: () => {
        calls.push('reserve');
        return { reservationId: 'outer-1' };
      },
      settle: (id) => void calls.push(`settle ${id}`),
      release: (id) => void calls.push(`release ${id}`),
    });
    const r = await b.reserve({ usd: 1, tokens: 1 }, ctx);
    await b.settle(r.reservationId, { usd: 1, tokens: 1 });
    const r2 = await b.reserve({ usd: 1, tokens: 1 }, ctx);
    await b.release(r2.reservationId);
    expect(calls).toEqual(['reserve', 'settle outer-1', 'reserve', 'release outer-1']);
  });
});

describe('trajectory export', () => {
  const ev = (seq: number, epoch: number, e: Partial<TrajectoryEvent>): TrajectoryEvent => ({
    sessionId: 's',
    seq,
    epoch,
    runId: 'r',
    atMs: 0,
    type: 'message',
    data: {},
    ...e,
  });
  it('keeps the latest epoch per seq and writes OpenAI chat messages', () => {
    const events = [
      ev(1, 1, {
        type: 'run_start',
        messages: [
          { role: 'system', content: 'S' },
          { role: 'user', content: 'U' },
        ],
      }),
      ev(2, 1, {
        type: 'model_call',
        messages: [{ role: 'assistant', content: 'lost to a crash' }],
      }),
      ev(2, 2, {
        type: 'model_call',
        messages: [
          {
            role: 'assistant',
            content: null,
            toolCalls: [{ id: 'c', name: 'f', argumentsText: '{}' }],
          },
        ],
      }),
      ev(3, 2, {
        type: 'tool_result',
        messages: [{ role: 'tool', toolCallId: 'c', content: 'ok' }],
      }),
      ev(4, 2, { type: 'run_end', data: { result: { stopReason: 'FINISHED' } } }),
    ];
    expect(latestPerSeq(events).map((e) => `${e.seq}@${e.epoch}`)).toEqual([
      '1@1',
      '2@2',
      '3@2',
      '4@2',
    ]);
    const record = trajectoryToRecord('s', events);
    expect(record.messages).toEqual([
      { role: 'system', content: 'S' },
      { role: 'user', content: 'U' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c', content: 'ok' },
    ]);
    expect(record.metadata.runs).toEqual([{ runId: 'r', stopReason: 'FINISHED' }]);
  });
});

test('createAgentActor refuses a maxAttempts below 1, naming the field', () => {
  const llm = new LlmClient({ registry: new ModelRegistry({ models: {} }) });
  const trajectories = {} as TrajectoryStore;
  expect(() => createAgentActor({ llm, trajectories, maxAttempts: 0 })).toThrow(
    /`maxAttempts`: must be an integer ≥ 1 \(got 0\)/,
  );
  expect(createAgentActor({ llm, trajectories }).maxAttempts).toBe(3);
});
