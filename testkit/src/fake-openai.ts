import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import { delay } from './internal/abort';
import {
  completionBody,
  completionChunks,
  errorBody,
  resolveCompletion,
} from './internal/chat-wire';
import { noopLogger, type TestkitLogger } from './logger';
import type {
  ChatRequest,
  FakeCompletion,
  FakeOpenAIHandler,
  RecordedRequest,
  ScriptedResponse,
  UnexpectedRequest,
} from './scripted-response';
import { waitFor } from './wait-for';

/** Options for {@link FakeOpenAI}. */
export interface FakeOpenAIOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get 401. @default any key accepted */
  apiKey?: string;
  /** Port to listen on. @default 0, a random free port */
  port?: number;
  /**
   * Interface to listen on; `0.0.0.0` serves other machines, e.g. the containers of a compose
   * cluster (the fake server in deploy/docker's `fake-openai` image). @default '127.0.0.1'
   */
  host?: string;
  /** Model ids listed by `GET /v1/models`. @default ['fake-model'] */
  models?: string[];
  /** Characters per content or tool-arguments piece in streamed replies. @default 4 */
  streamChunkChars?: number;
  /** Receives one debug line per request. @default no logging */
  logger?: TestkitLogger;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * An OpenAI-compatible HTTP server for tests: the Chat Completions API (plain and SSE streaming,
 * content, tool calls, usage) and the models list, answering from a script. Replies come from
 * the queue filled by {@link FakeOpenAI.enqueue}, then from the {@link FakeOpenAI.setHandler}
 * function. A request with no scripted reply gets HTTP 500 (with `x-should-retry: false`) and
 * is recorded so {@link FakeOpenAI.assertScriptConsumed} fails the test loudly.
 *
 * @example
 * ```ts
 * const fake = await FakeOpenAI.start();
 * fake.enqueue({ status: 429, retryAfterMs: 10 }, { content: 'hi' });
 * const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'test' });
 * // ...
 * fake.assertScriptConsumed();
 * await fake.close();
 * ```
 */
export class FakeOpenAI {
  /** Every request received, in arrival order (including rejected ones). */
  readonly requests: RecordedRequest[] = [];
  /** Requests that had no scripted reply or were malformed; non-empty fails `assertScriptConsumed`. */
  readonly unexpectedRequests: UnexpectedRequest[] = [];

  private readonly queue: ScriptedResponse[] = [];
  private handler: FakeOpenAIHandler | undefined;
  private server: http.Server | undefined;
  private readonly sockets = new Set<Socket>();
  private lifetime = new AbortController();
  private portValue: number | undefined;
  private completionSeq = 0;
  private toolCallSeq = 0;
  private readonly logger: TestkitLogger;

  constructor(private readonly options: FakeOpenAIOptions = {}) {
    this.logger = options.logger ?? noopLogger;
  }

  /** Creates a server and starts it. */
  static async start(
    options: FakeOpenAIOptions = {},
    startOptions: { signal?: AbortSignal } = {},
  ): Promise<FakeOpenAI> {
    const fake = new FakeOpenAI(options);
    await fake.start(startOptions);
    return fake;
  }

  /** Starts listening on the `host` option's interface. Rejects if already started. */
  async start(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.server !== undefined) throw new Error('FakeOpenAI already started');
    options.signal?.throwIfAborted();
    this.lifetime = new AbortController();
    const server = http.createServer((req, res) => void this.onRequest(req, res));
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        server.close();
        reject(
          options.signal?.reason instanceof Error ? options.signal.reason : new Error('aborted'),
        );
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      server.once('error', (err) => {
        options.signal?.removeEventListener('abort', onAbort);
        reject(err);
      });
      server.listen(
        { host: this.options.host ?? '127.0.0.1', port: this.options.port ?? 0 },
        () => {
          options.signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      );
    }).catch((err: unknown) => {
      this.server = undefined;
      throw err;
    });
    const address = server.address();
    if (address === null || typeof address === 'string')
      throw new Error('FakeOpenAI: no TCP address');
    this.portValue = address.port;
  }

  /**
   * Stops the server, destroying open (keep-alive and streaming) connections so it never hangs,
   * and cancels delayed replies. Safe to call twice.
   */
  async close(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    this.lifetime.abort(new Error('FakeOpenAI closed'));
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await closed;
  }

  /** The port the server listens on. Throws before `start()`. */
  get port(): number {
    if (this.portValue === undefined) throw new Error('FakeOpenAI not started');
    return this.portValue;
  }

  /**
   * Base URL for the openai SDK's `baseURL` option: `http://127.0.0.1:PORT/v1` (the `host`
   * option's address instead when it names one interface).
   */
  get baseURL(): string {
    const host = this.options.host;
    const local = host === undefined || host === '0.0.0.0' || host === '::' || host.includes(':');
    return `http://${local ? '127.0.0.1' : host}:${this.port}/v1`;
  }

  /** Number of queued replies not yet used. */
  get pendingResponses(): number {
    return this.queue.length;
  }

  /** The chat completion requests received so far (bodies parsed), in order. */
  get chatRequests(): ChatRequest[] {
    return this.requests.filter(isChatRequest);
  }

  /** Appends replies to the script; each chat request takes the next one. */
  enqueue(...responses: ScriptedResponse[]): this {
    this.queue.push(...responses);
    return this;
  }

  /** Sets the function that replies once the queue is empty (undefined removes it). */
  setHandler(handler: FakeOpenAIHandler | undefined): this {
    this.handler = handler;
    return this;
  }

  /** Forgets the queue, the handler and all recorded requests. */
  reset(): void {
    this.queue.length = 0;
    this.handler = undefined;
    this.requests.length = 0;
    this.unexpectedRequests.length = 0;
  }

  /**
   * Throws when a request was not covered by the script (script exhausted, unknown route,
   * malformed request, handler error) or when queued replies were never used. The message
   * describes each offending request.
   */
  assertScriptConsumed(): void {
    const problems: string[] = this.unexpectedRequests.map(
      ({ request, reason }) =>
        `  - request #${request.index} ${describeRequest(request)}: ${reason}`,
    );
    if (this.queue.length > 0) {
      problems.push(`  - ${this.queue.length} scripted response(s) were never requested`);
    }
    if (problems.length > 0) {
      throw new Error(`FakeOpenAI script mismatch:\n${problems.join('\n')}`);
    }
  }

  /**
   * Resolves once at least `count` requests have arrived (all routes), e.g. to know an agent has
   * called the model before acting on it.
   */
  async waitForRequests(
    count: number,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<RecordedRequest[]> {
    await waitFor(() => this.requests.length >= count, {
      ...options,
      intervalMs: 5,
      message: `FakeOpenAI: ${count} request(s) (got ${this.requests.length})`,
    });
    return this.requests.slice(0, count);
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Aborts delayed or streaming replies when the client goes away or the server closes.
    const requestAbort = new AbortController();
    res.once('close', () => requestAbort.abort(new Error('client disconnected')));
    const signal = AbortSignal.any([requestAbort.signal, this.lifetime.signal]);
    try {
      const record = await this.record(req);
      this.logger.debug(
        { index: record.index, method: record.method, path: record.path },
        'request',
      );
      if (!this.authorized(req)) {
        sendJson(
          res,
          401,
          errorBody(401, 'Incorrect API key provided (FakeOpenAI apiKey mismatch)'),
        );
        return;
      }
      if (record.method === 'POST' && record.path === '/v1/chat/completions') {
        await this.onChatCompletion(record, res, signal);
      } else if (record.method === 'GET' && record.path === '/v1/models') {
        sendJson(res, 200, { object: 'list', data: this.modelIds().map(modelObject) });
      } else if (record.method === 'GET' && record.path.startsWith('/v1/models/')) {
        const id = decodeURIComponent(record.path.slice('/v1/models/'.length));
        if (this.modelIds().includes(id)) sendJson(res, 200, modelObject(id));
        else
          sendJson(
            res,
            404,
            errorBody(404, `The model '${id}' does not exist`, undefined, 'model_not_found'),
          );
      } else {
        this.unexpected(record, `no such route in FakeOpenAI: ${record.method} ${record.path}`);
        sendJson(
          res,
          404,
          errorBody(404, `FakeOpenAI has no route ${record.method} ${record.path}`),
        );
      }
    } catch (err) {
      if (signal.aborted) {
        res.destroy();
        return;
      }
      this.logger.error({ err }, 'FakeOpenAI request failed');
      if (!res.headersSent)
        sendJson(res, 500, errorBody(500, `FakeOpenAI internal error: ${String(err)}`));
      else res.destroy();
    }
  }

  private async onChatCompletion(
    record: RecordedRequest,
    res: ServerResponse,
    signal: AbortSignal,
  ): Promise<void> {
    const invalid = validateChatBody(record.body);
    if (invalid !== undefined) {
      this.unexpected(record, `invalid chat completion request: ${invalid}`);
      sendJson(res, 400, errorBody(400, invalid));
      return;
    }
    const request = record as ChatRequest;
    let scripted = this.queue.shift();
    if (scripted === undefined && this.handler !== undefined) {
      try {
        scripted = await this.handler(request);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        this.unexpected(record, `FakeOpenAI handler threw: ${message}`);
        sendJson(res, 500, errorBody(500, `FakeOpenAI handler threw: ${message}`), {
          'x-should-retry': 'false',
        });
        return;
      }
    }
    if (scripted === undefined) {
      const reason = 'script exhausted: no response queued and no handler reply';
      this.unexpected(record, reason);
      // Tell the SDK not to retry, so one unexpected call shows up as one failure.
      sendJson(
        res,
        500,
        errorBody(
          500,
          `FakeOpenAI ${reason} for request #${record.index} ${describeRequest(record)}; ` +
            'enqueue() more responses or setHandler()',
          'fake_script_exhausted',
        ),
        { 'x-should-retry': 'false' },
      );
      return;
    }
    if (scripted.delayMs !== undefined && scripted.delayMs > 0)
      await delay(scripted.delayMs, signal);

    if ('disconnect' in scripted) {
      res.destroy();
      return;
    }
    const stream = request.body.stream === true;
    if ('malformed' in scripted) {
      if (stream) {
        res.writeHead(200, sseHeaders());
        res.end('data: {"id": "chatcmpl-malformed", "choices": [\n\n');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"id": "chatcmpl-malformed", "choices": [');
      }
      return;
    }
    if ('status' in scripted) {
      const headers: Record<string, string> = { ...scripted.headers };
      if (scripted.retryAfterS !== undefined) headers['retry-after'] = String(scripted.retryAfterS);
      if (scripted.retryAfterMs !== undefined) {
        headers['retry-after-ms'] = String(scripted.retryAfterMs);
      }
      const body =
        scripted.body ??
        (scripted.status >= 400
          ? errorBody(scripted.status, `FakeOpenAI scripted HTTP ${scripted.status}`)
          : {});
      if (typeof body === 'string') {
        res.writeHead(scripted.status, { 'content-type': 'text/plain', ...headers });
        res.end(body);
      } else sendJson(res, scripted.status, body, headers);
      return;
    }
    await this.sendCompletion(scripted, request, res, signal);
  }

  private async sendCompletion(
    scripted: FakeCompletion,
    request: ChatRequest,
    res: ServerResponse,
    signal: AbortSignal,
  ): Promise<void> {
    this.completionSeq += 1;
    const completion = resolveCompletion(scripted, request.body, {
      completionId: `chatcmpl-fake-${this.completionSeq}`,
      nextToolCallId: () => `call_${++this.toolCallSeq}`,
    });
    if (request.body.stream !== true) {
      sendJson(res, 200, completionBody(completion));
      return;
    }
    const chunks = completionChunks(
      completion,
      scripted.chunkChars ?? this.options.streamChunkChars ?? 4,
      request.body.stream_options?.include_usage === true,
    );
    res.writeHead(200, sseHeaders());
    for (const chunk of chunks) {
      if (signal.aborted) return;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (scripted.chunkDelayMs !== undefined && scripted.chunkDelayMs > 0) {
        await delay(scripted.chunkDelayMs, signal);
      }
    }
    res.end('data: [DONE]\n\n');
  }

  private async record(req: IncomingMessage): Promise<RecordedRequest> {
    const receivedAtMs = Date.now();
    const rawBody = await readBody(req);
    let body: unknown;
    if (rawBody.length > 0) {
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
    }
    const record: RecordedRequest = {
      index: this.requests.length,
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0] ?? '/',
      headers: req.headers,
      body,
      rawBody,
      receivedAtMs,
    };
    this.requests.push(record);
    return record;
  }

  private authorized(req: IncomingMessage): boolean {
    if (this.options.apiKey === undefined) return true;
    return req.headers.authorization === `Bearer ${this.options.apiKey}`;
  }

  private modelIds(): string[] {
    return this.options.models ?? ['fake-model'];
  }

  private unexpected(request: RecordedRequest, reason: string): void {
    this.unexpectedRequests.push({ request, reason });
    this.logger.warn({ index: request.index, path: request.path, reason }, 'unexpected request');
  }
}

function isChatRequest(request: RecordedRequest): request is ChatRequest {
  return (
    request.method === 'POST' &&
    request.path === '/v1/chat/completions' &&
    validateChatBody(request.body) === undefined
  );
}

/** Returns why a body is not a chat completion request (naming the field), or undefined. */
function validateChatBody(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return 'body must be a JSON object';
  }
  const candidate = body as Partial<Record<keyof ChatCompletionCreateParams, unknown>>;
  if (typeof candidate.model !== 'string' || candidate.model.length === 0) {
    return '`model` must be a non-empty string';
  }
  if (!Array.isArray(candidate.messages)) return '`messages` must be an array';
  return undefined;
}

function describeRequest(request: RecordedRequest): string {
  let summary = `${request.method} ${request.path}`;
  const body = request.body as { model?: unknown; messages?: unknown } | undefined;
  if (body && typeof body.model === 'string') summary += ` model=${body.model}`;
  if (body && Array.isArray(body.messages)) {
    const last = body.messages[body.messages.length - 1] as
      { role?: unknown; content?: unknown } | undefined;
    if (last !== undefined) {
      const content =
        typeof last.content === 'string' ? last.content : JSON.stringify(last.content);
      const snippet = content.length > 120 ? `${content.slice(0, 117)}...` : content;
      summary += ` messages=${body.messages.length} last=${String(last.role)}: ${JSON.stringify(snippet)}`;
    }
  }
  return summary;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error(`request body larger than ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

function sseHeaders(): Record<string, string> {
  return {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  };
}

function modelObject(id: string): {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
} {
  return { id, object: 'model', created: 0, owned_by: 'troupe-testkit' };
}
