import { inspect } from 'node:util';
import type { BudgetAmount, BudgetHook, BudgetReserveContext } from '../../src/budget-hook';
import type { ChatDelta, ChatOptions } from '../../src/chat-options';
import { computeCostUsd } from '../../src/compute-cost-usd';
import { estimatePromptTokens } from '../../src/estimate-tokens';
import { InMemoryCallRecorder } from '../../src/in-memory-call-recorder';
import { LlmClient, type LlmClientOptions } from '../../src/llm-client';
import type { ModelOptions } from '../../src/model-config';
import { ModelRegistry } from '../../src/model-registry';
import type { RateLimitHook } from '../../src/rate-limit-hook';
import type { Logger } from '@troupe/actors';
import { cancelledError, TroupeError } from '@troupe/proto';
import { FakeOpenAI } from '@troupe/testkit';

const SECRET = 'sk-troupe-test-4f1c9e2b7a6d5c3e8f0a1b2c';
const KEY_ENV = 'TROUPE_LLM_TEST_KEY';

let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await FakeOpenAI.start();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => {
  fake.reset();
});

function registry(model: Partial<ModelOptions> = {}, server: FakeOpenAI = fake): ModelRegistry {
  return new ModelRegistry({
    models: {
      'gpt-test': {
        baseURL: server.baseURL,
        model: 'fake-model',
        inputUsdPer1M: 2.5,
        outputUsdPer1M: 10,
        maxTokens: 256,
        ...model,
      },
    },
  });
}

function client(
  options: Partial<LlmClientOptions> = {},
  model: Partial<ModelOptions> = {},
): LlmClient {
  return new LlmClient({
    registry: registry(model),
    retry: { initialBackoffMs: 1, maxBackoffMs: 5, jitterRatio: 0 },
    ...options,
  });
}

function ask(overrides: Partial<ChatOptions> = {}): ChatOptions {
  return {
    model: 'gpt-test',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Say hi.' },
    ],
    signal: AbortSignal.timeout(30_000),
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<TroupeError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof TroupeError) return err;
    throw new Error(`expected a TroupeError, got ${inspect(err)}`);
  }
  throw new Error('expected the call to fail');
}

interface BudgetCall {
  op: 'reserve' | 'settle' | 'release';
  id: string;
  amount?: BudgetAmount;
  context?: BudgetReserveContext;
  requestsSeen: number;
}

/** A ledger double recording every call (the real ledger lives in the coordinator). */
function recordingBudget(onReserve?: (amount: BudgetAmount) => void): {
  hook: BudgetHook;
  calls: BudgetCall[];
} {
  const calls: BudgetCall[] = [];
  let seq = 0;
  const hook: BudgetHook = {
    reserve: (amount, context) => {
      onReserve?.(amount);
      const id = `r${++seq}`;
      calls.push({ op: 'reserve', id, amount, context, requestsSeen: fake.requests.length });
      return { reservationId: id };
    },
    settle: (id, amount) => {
      calls.push({ op: 'settle', id, amount, requestsSeen: fake.requests.length });
    },
    release: (id) => {
      calls.push({ op: 'release', id, requestsSeen: fake.requests.length });
    },
  };
  return { hook, calls };
}

describe('LlmClient against FakeOpenAI', () => {
  afterEach(() => {
    fake.assertScriptConsumed();
  });

  it('returns a plain completion with usage and cost from the registry prices', async () => {
    const recorder = new InMemoryCallRecorder();
    fake.enqueue({ content: 'hi', usage: { prompt_tokens: 1_000, completion_tokens: 500 } });
    const result = await client({ recorder }).chat(
      ask({ temperature: 0.2, metadata: { job: 'j1' } }),
    );

    expect(result.message).toEqual({ role: 'assistant', content: 'hi', toolCalls: [] });
    expect(result.finishReason).toBe('stop');
    expect(result.usage).toEqual({
      promptTokens: 1_000,
      completionTokens: 500,
      totalTokens: 1_500,
    });
    expect(result.usageEstimated).toBe(false);
    expect(result.costUsd).toBeCloseTo((1_000 * 2.5 + 500 * 10) / 1e6, 12);
    expect(result.attempts).toBe(1);
    expect(result.model).toBe('gpt-test');
    expect(result.providerModel).toBe('fake-model');
    expect(result.requestId).toMatch(/^llm_/);
    expect(result.latencyMs).toBeGreaterThan(0);

    const [request] = fake.chatRequests;
    expect(request!.body).toMatchObject({
      model: 'fake-model',
      max_tokens: 256,
      temperature: 0.2,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hi.' },
      ],
    });
    expect(request!.body.stream).toBeUndefined();
    expect(request!.headers['x-client-request-id']).toBe(result.requestId);

    expect(recorder.records).toEqual([
      expect.objectContaining({
        model: 'gpt-test',
        requestId: result.requestId,
        attempts: 1,
        status: 'ok',
        costUsd: result.costUsd,
        usage: result.usage,
        metadata: { job: 'j1' },
      }),
    ]);
    expect(recorder.totals()['gpt-test']).toMatchObject({
      calls: 1,
      errors: 0,
      totalTokens: 1_500,
    });
  });

  it('sends text and image parts of a user turn in the OpenAI chat format', async () => {
    const png = 'data:image/png;base64,iVBORw0KGgo=';
    fake.enqueue({
      content: 'I see a desktop.',
      usage: { prompt_tokens: 800, completion_tokens: 5 },
    });
    const result = await client().chat(
      ask({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is on the screen?' },
              { type: 'image', url: png, detail: 'low' },
            ],
          },
        ],
      }),
    );
    expect(result.message.content).toBe('I see a desktop.');
    expect(fake.chatRequests[0]!.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is on the screen?' },
          { type: 'image_url', image_url: { url: png, detail: 'low' } },
        ],
      },
    ]);
  });

  it('refuses an image part whose url is neither data: nor https:, naming the field', async () => {
    const err = await failure(
      client().chat(
        ask({
          messages: [{ role: 'user', content: [{ type: 'image', url: 'file:///etc/passwd' }] }],
        }),
      ),
    );
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toContain('messages[0].content[0].url');
    expect(fake.requests).toHaveLength(0);
  });

  it('returns tool calls with raw arguments, malformed JSON passed through untouched', async () => {
    const malformed = '{"path": "b.txt", "content": ';
    fake.enqueue({
      toolCalls: [
        { name: 'read_file', arguments: { path: 'a.txt' } },
        { name: 'write_file', arguments: malformed, id: 'call_custom' },
      ],
    });
    const result = await client().chat(
      ask({
        messages: [
          { role: 'user', content: 'go' },
          {
            role: 'assistant',
            content: null,
            toolCalls: [{ id: 'call_0', name: 'list', argumentsText: '{}' }],
          },
          { role: 'tool', toolCallId: 'call_0', content: 'a.txt' },
        ],
        tools: [
          {
            name: 'read_file',
            description: 'Read a file',
            parameters: { type: 'object', properties: { path: { type: 'string' } } },
          },
        ],
        toolChoice: 'required',
        maxTokens: 64,
      }),
    );

    expect(result.finishReason).toBe('tool_calls');
    expect(result.message.content).toBeNull();
    expect(result.message.toolCalls).toEqual([
      { id: expect.any(String), name: 'read_file', argumentsText: '{"path":"a.txt"}' },
      { id: 'call_custom', name: 'write_file', argumentsText: malformed },
    ]);
    expect(fake.chatRequests[0]!.body).toMatchObject({
      max_tokens: 64,
      tool_choice: 'required',
      tools: [{ type: 'function', function: { name: 'read_file', description: 'Read a file' } }],
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_0', type: 'function', function: { name: 'list', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_0', content: 'a.txt' },
      ],
    });
  });

  it('reassembles a streamed reply and reports progress through onDelta', async () => {
    const content = 'Hello, streaming world!';
    const args = '{"query": "troupe", "limit": 3';
    fake.enqueue({
      content,
      toolCalls: [{ name: 'search', arguments: args }],
      usage: { prompt_tokens: 40, completion_tokens: 20 },
      chunkChars: 3,
    });
    const deltas: ChatDelta[] = [];
    const result = await client().chat(ask({ stream: true, onDelta: (d) => deltas.push(d) }));

    expect(result.message.content).toBe(content);
    expect(result.message.toolCalls).toEqual([
      { id: expect.any(String), name: 'search', argumentsText: args },
    ]);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.usage).toEqual({ promptTokens: 40, completionTokens: 20, totalTokens: 60 });
    expect(result.costUsd).toBeCloseTo(
      computeCostUsd({ inputUsdPer1M: 2.5, outputUsdPer1M: 10 }, 40, 20),
      12,
    );

    const text = deltas.filter((d) => d.kind === 'content');
    expect(text.length).toBeGreaterThan(3);
    expect(text.map((d) => d.text).join('')).toBe(content);
    const toolPieces = deltas.filter((d) => d.kind === 'tool_call');
    expect(toolPieces[0]).toMatchObject({ index: 0, name: 'search', attempt: 1 });
    expect(toolPieces.map((d) => d.argumentsText).join('')).toBe(args);
    expect(fake.chatRequests[0]!.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('waits for retry-after-ms on a 429, then succeeds on the second attempt', async () => {
    fake.enqueue({ status: 429, retryAfterMs: 150 }, { content: 'ok' });
    const result = await client().chat(ask());
    expect(result.attempts).toBe(2);
    expect(result.message.content).toBe('ok');
    const [first, second] = fake.chatRequests;
    expect(second!.receivedAtMs - first!.receivedAtMs).toBeGreaterThanOrEqual(150);
    expect(result.latencyMs).toBeGreaterThanOrEqual(150);
  });

  it('honours retry-after in seconds', async () => {
    fake.enqueue({ status: 429, retryAfterS: 1 }, { content: 'ok' });
    const result = await client().chat(ask());
    expect(result.attempts).toBe(2);
    const [first, second] = fake.chatRequests;
    expect(second!.receivedAtMs - first!.receivedAtMs).toBeGreaterThanOrEqual(1_000);
  });

  it('gives up on a 429 storm with UNAVAILABLE carrying the attempt count and status', async () => {
    const recorder = new InMemoryCallRecorder();
    fake.enqueue(
      { status: 429, retryAfterMs: 5 },
      { status: 429, retryAfterMs: 5 },
      { status: 429, retryAfterMs: 5 },
    );
    const err = await failure(
      client({ recorder, retry: { maxAttempts: 3, initialBackoffMs: 1 } }).chat(ask()),
    );
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.retryable).toBe(true);
    expect(err.details).toMatchObject({ attempts: 3, status: 429, model: 'gpt-test' });
    expect(err.message).toContain('gave up after 3 attempt(s)');
    expect(fake.chatRequests).toHaveLength(3);
    expect(recorder.records[0]).toMatchObject({
      status: 'error',
      attempts: 3,
      error: { code: 'UNAVAILABLE' },
    });
  });

  it('retries a 500 and succeeds', async () => {
    fake.enqueue({ status: 500 }, { content: 'recovered' });
    const result = await client().chat(ask());
    expect(result.attempts).toBe(2);
    expect(result.message.content).toBe('recovered');
  });

  it('retries a dropped connection and an attempt timeout', async () => {
    fake.enqueue({ disconnect: true }, { content: 'slow', delayMs: 5_000 }, { content: 'ok' });
    const result = await client({}, { timeoutMs: 200 }).chat(ask());
    expect(result.attempts).toBe(3);
    expect(result.message.content).toBe('ok');
  });

  it('retries a malformed body, then fails with UNAVAILABLE', async () => {
    fake.enqueue({ malformed: true }, { malformed: true });
    const err = await failure(
      client({ retry: { maxAttempts: 2, initialBackoffMs: 1 } }).chat(ask()),
    );
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toContain('malformed response');
    expect(err.details).toMatchObject({ attempts: 2 });
    expect(fake.chatRequests).toHaveLength(2);
  });

  it('retries a malformed stream', async () => {
    fake.enqueue({ malformed: true }, { content: 'fine' });
    const result = await client().chat(ask({ stream: true }));
    expect(result.attempts).toBe(2);
    expect(result.message.content).toBe('fine');
  });

  it('maps a 400 to INVALID_ARGUMENT without retrying', async () => {
    fake.enqueue({
      status: 400,
      body: {
        error: {
          message: "'messages' is too long",
          type: 'invalid_request_error',
          code: 'context_length_exceeded',
        },
      },
    });
    const err = await failure(client().chat(ask()));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.retryable).toBe(false);
    expect(err.details).toMatchObject({
      attempts: 1,
      status: 400,
      providerCode: 'context_length_exceeded',
    });
    expect(err.message).toContain("'messages' is too long");
    expect(fake.chatRequests).toHaveLength(1);
  });

  it.each([
    [401, 'UNAUTHENTICATED'],
    [403, 'PERMISSION_DENIED'],
    [404, 'NOT_FOUND'],
    [422, 'INVALID_ARGUMENT'],
  ])('maps HTTP %i to %s without retrying', async (status, code) => {
    fake.enqueue({ status });
    const err = await failure(client().chat(ask()));
    expect(err.code).toBe(code);
    expect(fake.chatRequests).toHaveLength(1);
  });

  it('does not wait for a retry-after that passes the call deadline', async () => {
    fake.enqueue({ status: 429, retryAfterMs: 20_000 });
    const started = Date.now();
    const err = await failure(client().chat(ask({ totalTimeoutMs: 2_000 })));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.details).toMatchObject({ attempts: 1, retryAfterMs: 20_000 });
    expect(err.message).toContain('past the deadline');
  });

  describe('budget', () => {
    it('reserves the worst case before sending and settles the actual usage', async () => {
      const { hook, calls } = recordingBudget();
      fake.enqueue({ content: 'hi', usage: { prompt_tokens: 30, completion_tokens: 7 } });
      const options = ask({ maxTokens: 100, budget: hook, metadata: { agent: 'a1' } });
      const result = await client().chat(options);

      const estimate = estimatePromptTokens(options.messages, undefined);
      expect(calls.map((c) => c.op)).toEqual(['reserve', 'settle']);
      expect(calls[0]).toMatchObject({
        requestsSeen: 0,
        amount: { tokens: estimate + 100, usd: (estimate * 2.5 + 100 * 10) / 1e6 },
        context: {
          requestId: result.requestId,
          model: 'gpt-test',
          attempt: 1,
          metadata: { agent: 'a1' },
        },
      });
      expect(calls[1]).toMatchObject({
        id: calls[0]!.id,
        requestsSeen: 1,
        amount: { tokens: 37, usd: result.costUsd },
      });
    });

    it('sends nothing when reserve throws BUDGET_EXHAUSTED', async () => {
      const recorder = new InMemoryCallRecorder();
      const budget: BudgetHook = {
        reserve: () => {
          throw new TroupeError('BUDGET_EXHAUSTED', 'job j1: $0.00 left of $1.00');
        },
        settle: () => undefined,
        release: () => undefined,
      };
      const err = await failure(client({ recorder, budget }).chat(ask()));
      expect(err.code).toBe('BUDGET_EXHAUSTED');
      expect(fake.requests).toHaveLength(0);
      expect(recorder.records[0]).toMatchObject({ status: 'error', attempts: 0 });
    });

    it('reserves per attempt: releases a failed attempt, settles the successful one', async () => {
      const { hook, calls } = recordingBudget();
      fake.enqueue({ status: 503 }, { content: 'ok' });
      await client({ budget: hook }).chat(ask());
      expect(calls.map((c) => `${c.op}:${c.id}`)).toEqual([
        'reserve:r1',
        'release:r1',
        'reserve:r2',
        'settle:r2',
      ]);
      expect(calls[2]!.context?.attempt).toBe(2);
    });

    it('releases the reservation when the request is rejected', async () => {
      const { hook, calls } = recordingBudget();
      fake.enqueue({ status: 400 });
      await failure(client({ budget: hook }).chat(ask()));
      expect(calls.map((c) => c.op)).toEqual(['reserve', 'release']);
    });
  });

  describe('cancellation', () => {
    it('ends with CANCELLED when aborted mid-request, without retrying', async () => {
      const { hook, calls } = recordingBudget();
      fake.enqueue({ content: 'too late', delayMs: 10_000 });
      const controller = new AbortController();
      const pending = client({ budget: hook }).chat(ask({ signal: controller.signal }));
      await fake.waitForRequests(1, { timeoutMs: 10_000 });
      controller.abort(cancelledError('user'));
      const err = await failure(pending);
      expect(err.code).toBe('CANCELLED');
      expect(err.details).toMatchObject({ reason: 'user' });
      expect(fake.chatRequests).toHaveLength(1);
      expect(calls.map((c) => c.op)).toEqual(['reserve', 'release']);
    });

    it('ends with TIMEOUT when totalTimeoutMs passes mid-request', async () => {
      fake.enqueue({ content: 'too late', delayMs: 10_000 });
      const err = await failure(client().chat(ask({ totalTimeoutMs: 300 })));
      expect(err.code).toBe('TIMEOUT');
      expect(fake.chatRequests).toHaveLength(1);
    });

    it('settles an estimate when a stream is cut after tokens were generated', async () => {
      const { hook, calls } = recordingBudget();
      fake.enqueue({ content: 'a long answer arriving slowly', chunkChars: 2, chunkDelayMs: 20 });
      const controller = new AbortController();
      const err = await failure(
        client({ budget: hook }).chat(
          ask({ stream: true, signal: controller.signal, onDelta: () => controller.abort() }),
        ),
      );
      expect(err.code).toBe('CANCELLED');
      expect(calls.map((c) => c.op)).toEqual(['reserve', 'settle']);
      expect(calls[1]!.amount!.tokens).toBeGreaterThan(0);
      expect(fake.chatRequests).toHaveLength(1);
    });

    it('fails fast when the signal is already aborted', async () => {
      const err = await failure(client().chat(ask({ signal: AbortSignal.abort() })));
      expect(err.code).toBe('CANCELLED');
      expect(fake.requests).toHaveLength(0);
    });
  });

  it('keeps at most maxConcurrency requests in flight at the server', async () => {
    const delayMs = 150;
    for (let i = 0; i < 5; i++) fake.enqueue({ content: `r${i}`, delayMs });
    const llm = client({}, { maxConcurrency: 2 });
    const results = await Promise.all(Array.from({ length: 5 }, () => llm.chat(ask())));
    expect(results.map((r) => r.message.content).sort()).toEqual(['r0', 'r1', 'r2', 'r3', 'r4']);

    // A request is in flight at the server from its arrival until its reply, delayMs later.
    const arrivals = fake.chatRequests.map((r) => r.receivedAtMs).sort((a, b) => a - b);
    const inFlightAt = (t: number): number =>
      arrivals.filter((a) => a <= t && t < a + delayMs - 2).length;
    expect(Math.max(...arrivals.map(inFlightAt))).toBe(2);
  });

  it('waits for the rate-limit hook before sending', async () => {
    const asked: number[] = [];
    let denied = false;
    const rateLimit: RateLimitHook = {
      acquire: (_model, { tokens }) => {
        asked.push(tokens);
        if (denied) return { ok: true };
        denied = true;
        return { ok: false, retryAfterMs: 50 };
      },
    };
    fake.enqueue({ content: 'ok' });
    const started = Date.now();
    const result = await client({ rateLimit }).chat(ask());
    expect(result.attempts).toBe(1);
    expect(asked).toHaveLength(2);
    // 2 ms of slack: timers run on libuv's cached loop clock, Date.now() on the wall clock.
    expect(fake.chatRequests[0]!.receivedAtMs - started).toBeGreaterThanOrEqual(48);
  });
});

describe('API key handling', () => {
  let authed: FakeOpenAI;

  beforeAll(async () => {
    authed = await FakeOpenAI.start({ apiKey: SECRET });
  });

  afterAll(async () => {
    await authed.close();
    delete process.env[KEY_ENV];
  });

  function capturingLogger(lines: unknown[], bindings: Record<string, unknown> = {}): Logger {
    const at =
      (level: string) =>
      (obj: object, msg?: string): void => {
        lines.push({ level, ...bindings, ...obj, msg });
      };
    return {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (more) => capturingLogger(lines, { ...bindings, ...more }),
    };
  }

  it('sends the key from apiKeyEnv and never lets it into errors, logs, records or JSON', async () => {
    process.env[KEY_ENV] = SECRET;
    const lines: unknown[] = [];
    const recorder = new InMemoryCallRecorder();
    const reg = registry({ apiKeyEnv: KEY_ENV }, authed);
    const llm = new LlmClient({
      registry: reg,
      recorder,
      logger: capturingLogger(lines),
      retry: { maxAttempts: 2, initialBackoffMs: 1 },
    });
    const errors: unknown[] = [];
    const echo = (status: number): { status: number; body: unknown } => ({
      status,
      body: {
        error: { message: `Incorrect API key provided: ${SECRET}. Bearer ${SECRET}`, code: 'x' },
      },
    });
    authed.enqueue(
      { content: 'ok' },
      echo(401),
      echo(500),
      echo(500),
      { malformed: true },
      { content: 'streamed', chunkChars: 3 },
    );
    await llm.chat(ask());
    for (let i = 0; i < 3; i++) {
      await llm.chat(ask({ stream: i === 2 })).catch((err: unknown) => errors.push(err));
    }
    expect(errors).toHaveLength(2);
    expect(authed.chatRequests[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(lines.some((l) => (l as { level: string }).level === 'warn')).toBe(true);

    // Missing env var: UNAUTHENTICATED naming the variable, nothing sent.
    delete process.env[KEY_ENV];
    const sent = authed.requests.length;
    const missing = await failure(llm.chat(ask()));
    expect(missing.code).toBe('UNAUTHENTICATED');
    expect(missing.message).toContain(KEY_ENV);
    expect(authed.requests).toHaveLength(sent);
    errors.push(missing);

    const everything = [reg, llm, recorder.records, recorder.totals(), errors, lines];
    const dumps = [
      JSON.stringify(everything),
      inspect(everything, { depth: Infinity, showHidden: true }),
      ...errors.map((e) => `${(e as Error).message}\n${(e as Error).stack}`),
      ...errors.map((e) => inspect((e as Error).cause, { depth: Infinity, showHidden: true })),
    ];
    for (const dump of dumps) expect(dump).not.toContain(SECRET);
    expect(JSON.stringify(errors)).toContain('[redacted]');
    authed.assertScriptConsumed();
  });
});
