import {
  APIConnectionError,
  type APIError,
  AuthenticationError,
  RateLimitError,
  InternalServerError,
  OpenAI,
} from 'openai';
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import { FakeOpenAI } from '@troupe/testkit';

const tools: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
];

let fake: FakeOpenAI;
beforeEach(async () => {
  fake = await FakeOpenAI.start();
});
afterEach(async () => {
  await fake.close();
});

function client(options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}): OpenAI {
  // logLevel 'off': malformed-stream tests would otherwise print the SDK's parse errors.
  return new OpenAI({ baseURL: fake.baseURL, apiKey: 'test-key', logLevel: 'off', ...options });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected the promise to reject');
    },
    (err: unknown) => err,
  );
}

describe('FakeOpenAI with the openai SDK', () => {
  it('returns tool calls that the SDK parses, echoes the model and records the request', async () => {
    fake.enqueue({
      toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: { city: 'Paris' } }],
      usage: { prompt_tokens: 12, completion_tokens: 5 },
    });
    const completion = await client().chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools,
    });
    const choice = completion.choices[0]!;
    expect(completion.model).toBe('gpt-test');
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]!;
    expect(call.id).toBe('call_w1');
    expect(call.type).toBe('function');
    if (call.type !== 'function') throw new Error('expected a function tool call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    expect(completion.usage).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });

    expect(fake.requests).toHaveLength(1);
    const recorded = fake.chatRequests[0]!;
    expect(recorded.path).toBe('/v1/chat/completions');
    expect(recorded.headers.authorization).toBe('Bearer test-key');
    expect(recorded.body.messages).toEqual([{ role: 'user', content: 'Weather in Paris?' }]);
    expect(recorded.body.tools).toEqual(tools);
    fake.assertScriptConsumed();
  });

  it('estimates usage and reports length/stop finish reasons', async () => {
    fake.enqueue({ content: 'abcdefgh', finishReason: 'length' }, { content: 'ok' });
    const api = client();
    const first = await api.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x'.repeat(20) }],
    });
    expect(first.choices[0]!.finish_reason).toBe('length');
    expect(first.choices[0]!.message.content).toBe('abcdefgh');
    expect(first.usage).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
    const second = await api.chat.completions.create({ model: 'm', messages: [] });
    expect(second.choices[0]!.finish_reason).toBe('stop');
  });

  it('streams content and tool-call arguments in pieces that the SDK reassembles, with usage', async () => {
    const args = { city: 'Reykjavík', units: 'metric', days: [1, 2, 3] };
    const script = {
      content: 'Let me check the weather for you.',
      toolCalls: [
        { id: 'call_s1', name: 'get_weather', arguments: args },
        { name: 'log', arguments: '{"level":"info"}' },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 20, total_tokens: 50 },
    };
    fake.enqueue(script, script);
    const api = client();
    const request = {
      model: 'gpt-stream',
      messages: [{ role: 'user' as const, content: 'Weather?' }],
      tools,
      stream_options: { include_usage: true },
    };

    // Raw chunks: the content really arrives in several pieces and usage comes last.
    const raw = await api.chat.completions.create({ ...request, stream: true });
    const chunks = [];
    for await (const chunk of raw) chunks.push(chunk);
    const contentPieces = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? ''));
    expect(contentPieces.filter((p) => p.length > 0).length).toBeGreaterThan(3);
    expect(contentPieces.join('')).toBe(script.content);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual(script.usage);

    // The SDK's stream helper reassembles the full completion.
    const final = await api.chat.completions.stream(request).finalChatCompletion();
    const message = final.choices[0]!.message;
    expect(final.model).toBe('gpt-stream');
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(message.content).toBe(script.content);
    const calls = (message.tool_calls ?? []).map((c) => (c.type === 'function' ? c : undefined));
    expect(calls).toHaveLength(2);
    expect(calls[0]!.id).toBe('call_s1');
    expect(calls[0]!.function.name).toBe('get_weather');
    expect(JSON.parse(calls[0]!.function.arguments)).toEqual(args);
    expect(calls[1]!.id).toMatch(/^call_\d+$/);
    expect(calls[1]!.function.arguments).toBe('{"level":"info"}');
    expect(final.usage).toEqual(script.usage);
    expect(fake.chatRequests.map((r) => r.body.stream)).toEqual([true, true]);
    fake.assertScriptConsumed();
  });

  it('honours retry-after on 429: the SDK waits, retries and succeeds', async () => {
    fake.enqueue({ status: 429, retryAfterS: 1 }, { content: 'after the rate limit' });
    const started = Date.now();
    const completion = await client({ maxRetries: 2 }).chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const elapsedMs = Date.now() - started;
    expect(completion.choices[0]!.message.content).toBe('after the rate limit');
    expect(fake.requests).toHaveLength(2);
    // Without the header the SDK's first backoff is at most 500 ms.
    const gapMs = fake.requests[1]!.receivedAtMs - fake.requests[0]!.receivedAtMs;
    expect(gapMs).toBeGreaterThanOrEqual(990);
    expect(elapsedMs).toBeGreaterThanOrEqual(990);
    expect(fake.requests[1]!.headers['x-stainless-retry-count']).toBe('1');
    fake.assertScriptConsumed();
  });

  it('honours retry-after-ms', async () => {
    fake.enqueue({ status: 429, retryAfterMs: 700, retryAfterS: 5 }, { content: 'ok' });
    await client({ maxRetries: 1 }).chat.completions.create({ model: 'm', messages: [] });
    const gapMs = fake.requests[1]!.receivedAtMs - fake.requests[0]!.receivedAtMs;
    expect(gapMs).toBeGreaterThanOrEqual(690);
    expect(gapMs).toBeLessThan(4_000);
  });

  it('surfaces a 429 as RateLimitError once retries run out', async () => {
    fake.enqueue({ status: 429, retryAfterMs: 1 }, { status: 429, retryAfterMs: 1 });
    const err = await rejection(
      client({ maxRetries: 1 }).chat.completions.create({ model: 'm', messages: [] }),
    );
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as APIError).status).toBe(429);
    expect((err as APIError).code).toBe('rate_limit_exceeded');
    expect(fake.requests).toHaveLength(2);
  });

  it('retries a 500 and succeeds', async () => {
    fake.enqueue({ status: 500 }, { content: 'recovered' });
    const completion = await client({ maxRetries: 2 }).chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]!.message.content).toBe('recovered');
    expect(fake.requests).toHaveLength(2);
    fake.assertScriptConsumed();
  });

  it('makes the SDK fail on a malformed body, plain and streamed, without retrying', async () => {
    fake.enqueue({ malformed: true }, { malformed: true });
    const api = client({ maxRetries: 2 });
    const plain = await rejection(api.chat.completions.create({ model: 'm', messages: [] }));
    // Checked by name: jest's sandbox has its own SyntaxError, distinct from undici's.
    expect((plain as Error).name).toBe('SyntaxError');

    const stream = await api.chat.completions.create({ model: 'm', messages: [], stream: true });
    const streamed = await rejection(
      (async () => {
        for await (const _chunk of stream) {
          // Parsing the first event fails.
        }
      })(),
    );
    expect((streamed as Error).name).toBe('SyntaxError');
    expect(fake.requests).toHaveLength(2);
  });

  it('fails loudly when the script runs out', async () => {
    fake.enqueue({ content: 'only one' });
    const api = client({ maxRetries: 2 });
    await api.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'one' }] });
    const err = await rejection(
      api.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'an unscripted question' }],
      }),
    );
    expect(err).toBeInstanceOf(InternalServerError);
    expect((err as Error).message).toMatch(/script exhausted/);
    // x-should-retry: false keeps the SDK from retrying the unexpected request.
    expect(fake.requests).toHaveLength(2);
    expect(fake.unexpectedRequests).toHaveLength(1);
    expect(fake.unexpectedRequests[0]!.request.index).toBe(1);
    expect(() => fake.assertScriptConsumed()).toThrow(
      /request #1 POST \/v1\/chat\/completions model=m .*an unscripted question.*script exhausted/,
    );
  });

  it('fails assertScriptConsumed when scripted replies were never requested', () => {
    fake.enqueue({ content: 'a' }, { content: 'b' });
    expect(fake.pendingResponses).toBe(2);
    expect(() => fake.assertScriptConsumed()).toThrow(
      /2 scripted response\(s\) were never requested/,
    );
    fake.reset();
    expect(() => fake.assertScriptConsumed()).not.toThrow();
  });

  it('answers from an async handler once the queue is empty; the queue goes first', async () => {
    fake.enqueue({ content: 'from the queue' });
    fake.setHandler(async (req) => {
      const last = req.body.messages.at(-1);
      return { content: `echo: ${typeof last?.content === 'string' ? last.content : ''}` };
    });
    const api = client();
    const ask = async (content: string): Promise<string | null> =>
      (await api.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }] }))
        .choices[0]!.message.content;
    expect(await ask('one')).toBe('from the queue');
    expect(await ask('two')).toBe('echo: two');
    expect(await ask('three')).toBe('echo: three');
    fake.setHandler(() => undefined);
    await expect(ask('four')).rejects.toThrow(/script exhausted/);
  });

  it('lists models', async () => {
    await fake.close();
    fake = await FakeOpenAI.start({ models: ['fake-a', 'fake-b'] });
    const api = client();
    const ids: string[] = [];
    for await (const model of api.models.list()) ids.push(model.id);
    expect(ids).toEqual(['fake-a', 'fake-b']);
    expect((await api.models.retrieve('fake-b')).id).toBe('fake-b');
    fake.assertScriptConsumed();
  });

  it('rejects a wrong API key with 401 when apiKey is set', async () => {
    await fake.close();
    fake = await FakeOpenAI.start({ apiKey: 'right' });
    fake.enqueue({ content: 'ok' });
    const wrong = await rejection(
      client({ apiKey: 'wrong', maxRetries: 2 }).chat.completions.create({
        model: 'm',
        messages: [],
      }),
    );
    expect(wrong).toBeInstanceOf(AuthenticationError);
    expect(fake.pendingResponses).toBe(1);
    const ok = await client({ apiKey: 'right' }).chat.completions.create({
      model: 'm',
      messages: [],
    });
    expect(ok.choices[0]!.message.content).toBe('ok');
  });

  it('delays replies until the SDK gives up on its timeout', async () => {
    fake.enqueue({ delayMs: 30_000, content: 'too late' });
    const started = Date.now();
    const err = await rejection(
      client({ timeout: 200, maxRetries: 0 }).chat.completions.create({ model: 'm', messages: [] }),
    );
    // APIConnectionTimeoutError outside jest; inside jest's sandbox the SDK cannot recognise
    // undici's AbortError across realms and reports its parent class.
    expect(err).toBeInstanceOf(APIConnectionError);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(fake.requests).toHaveLength(1);
  });

  it('close() does not hang on an in-flight stream or keep-alive connections', async () => {
    fake.enqueue({ content: 'x'.repeat(100), chunkChars: 1, chunkDelayMs: 1_000 });
    const api = client({ maxRetries: 0 });
    const stream = await api.chat.completions.create({ model: 'm', messages: [], stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    const closing = fake.close();
    await expect(iterator.next()).rejects.toThrow();
    await closing;
    const after = await rejection(api.chat.completions.create({ model: 'm', messages: [] }));
    expect(after).toBeInstanceOf(APIConnectionError);
  });

  it('records unknown routes and invalid bodies as unexpected', async () => {
    const res = await fetch(`${fake.baseURL}/responses`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    const bad = await fetch(`${fake.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [] }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toBe(
      '`model` must be a non-empty string',
    );
    expect(fake.unexpectedRequests.map((u) => u.reason)).toEqual([
      'no such route in FakeOpenAI: POST /v1/responses',
      'invalid chat completion request: `model` must be a non-empty string',
    ]);
  });

  it('drops the connection for a disconnect fault; the SDK retries', async () => {
    fake.enqueue({ disconnect: true }, { content: 'second try' });
    const completion = await client({ maxRetries: 1 }).chat.completions.create({
      model: 'm',
      messages: [],
    });
    expect(completion.choices[0]!.message.content).toBe('second try');
    expect(fake.requests).toHaveLength(2);
  });

  it('waits for requests to arrive', async () => {
    fake.enqueue({ delayMs: 50, content: 'slow' });
    const call = client().chat.completions.create({ model: 'm', messages: [] });
    const [first] = await fake.waitForRequests(1, { timeoutMs: 5_000 });
    expect(first!.path).toBe('/v1/chat/completions');
    await call;
  });
});

test('the host option serves every interface (a container port), still reached on loopback', async () => {
  const wide = await FakeOpenAI.start({ host: '0.0.0.0' });
  try {
    expect(wide.baseURL).toBe(`http://127.0.0.1:${wide.port}/v1`);
    wide.enqueue({ content: 'from any interface' });
    const sdk = new OpenAI({ baseURL: wide.baseURL, apiKey: 'k', maxRetries: 0 });
    const r = await sdk.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.choices[0]?.message.content).toBe('from any interface');
    wide.assertScriptConsumed();
  } finally {
    await wide.close();
  }
});
