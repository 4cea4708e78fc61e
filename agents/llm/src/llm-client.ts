import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { type Logger, noopLogger } from '@troupe/actors';
import { delay, ErrorCode, fromAbortSignal, toTroupeError, TroupeError } from '@troupe/proto';
import type { BudgetAmount, BudgetHook, BudgetReservation } from './budget-hook';
import type { CallRecorder, LlmCallRecord } from './call-recorder';
import type { ChatDelta, ChatOptions } from './chat-options';
import type { ChatResult, LlmUsage } from './chat-result';
import { computeCostUsd } from './compute-cost-usd';
import { estimatePromptTokens, estimateTextTokens, type TokenEstimator } from './estimate-tokens';
import { callDeadline, type CallDeadline } from './internal/call-deadline';
import { type AttemptFailure, classifyFailure } from './internal/classify-failure';
import type { ParsedCompletion } from './internal/parse-completion';
import { parseCompletion } from './internal/parse-completion';
import { Semaphore } from './internal/semaphore';
import { StreamAssembler } from './internal/stream-assembler';
import { toOpenAIParams } from './internal/to-openai-params';
import { validateChatOptions } from './internal/validate-chat-options';
import type { ModelConfig } from './model-config';
import type { ModelRegistry } from './model-registry';
import { endpointModelConfig, endpointProviderKey, type ModelEndpoint } from './model-endpoint';
import type { RateLimitHook } from './rate-limit-hook';
import {
  backoffDelayMs,
  resolveRetryConfig,
  type RetryConfig,
  type RetryOptions,
} from './retry-options';
import { TokenBucketRateLimiter } from './token-bucket-rate-limiter';

/** Options of {@link LlmClient}. */
export interface LlmClientOptions {
  /** Where models are and what they cost. */
  registry: ModelRegistry;
  /** Pino-compatible logger; message contents and keys are never logged. @default no logging */
  logger?: Logger;
  /** Receives a record of every call. @default none */
  recorder?: CallRecorder;
  /** Budget for calls that do not pass their own. @default none */
  budget?: BudgetHook;
  /**
   * Rate limiting asked before every attempt.
   * @default a {@link TokenBucketRateLimiter} from the registry's `rpm`/`tpm`
   */
  rateLimit?: RateLimitHook;
  /** Retry policy. @default see {@link RetryOptions} */
  retry?: RetryOptions;
  /** Token estimate of a text, for worst-case reservations. @default {@link estimateTextTokens} */
  estimateTokens?: TokenEstimator;
  /** Where `apiKeyEnv` variables are read, at call time. @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
}

// Sent to servers that need no key (vLLM, Ollama, llama.cpp without --api-key). Passing nothing
// would make the SDK fall back to OPENAI_API_KEY and leak the OpenAI key to a local server.
const NO_KEY = 'not-needed';

interface Provider {
  apiKey: string;
  sdk: OpenAI;
}

/** Mutable facts about one call, shared by its attempts. */
interface CallState {
  name: string;
  model: ModelConfig;
  options: ChatOptions;
  requestId: string;
  log: Logger;
  deadline: CallDeadline;
  provider: Provider;
  /** The key in use, for redaction; undefined when none is sent. */
  secret: string | undefined;
  params: ChatCompletionCreateParamsNonStreaming;
  promptTokensEstimate: number;
  worstCase: BudgetAmount;
  budget: BudgetHook | undefined;
  attempts: number;
  /** Usage and cost settled so far over all attempts (what the budget was charged). */
  spent: { usage: LlmUsage; costUsd: number; estimated: boolean };
}

type AttemptOutcome =
  | {
      ok: true;
      completion: ParsedCompletion;
      usage: LlmUsage;
      costUsd: number;
      providerRequestId: string | undefined;
    }
  | { ok: false; failure: AttemptFailure };

/**
 * Chat Completions against any OpenAI-compatible server in the {@link ModelRegistry}, through the
 * `openai` SDK with its own retries off so that each attempt is bracketed by the budget:
 *
 * 1. per-model `maxConcurrency` slot, then a rate-limit permit ({@link RateLimitHook});
 * 2. `budget.reserve(worst case)` — estimated prompt tokens × input price + completion cap ×
 *    output price; a `BUDGET_EXHAUSTED` there propagates and nothing is sent;
 * 3. the request (streamed or not), bounded by the model's `timeoutMs`;
 * 4. `settle` with the provider's usage, or `release` on failure.
 *
 * Failed attempts (HTTP 408/409/429/5xx, connection errors, malformed bodies, attempt timeouts)
 * are retried with exponential backoff and jitter, honouring `retry-after-ms`/`retry-after`,
 * never past the caller's signal or `totalTimeoutMs`. Errors are `TroupeError`s: 400/422 →
 * `INVALID_ARGUMENT`, 401 → `UNAUTHENTICATED`, 403 → `PERMISSION_DENIED`, 404 → `NOT_FOUND`,
 * retries exhausted → `UNAVAILABLE` (retryable, `details.attempts`/`status`), abort →
 * `CANCELLED`/`TIMEOUT`. Every call is recorded. API keys are read from the environment at call
 * time and kept only in private fields; they are redacted from every message.
 */
export class LlmClient {
  /** The registry calls are resolved against. */
  readonly registry: ModelRegistry;
  // ECMAScript private fields: invisible to JSON.stringify and util.inspect, which matters for
  // #providers (the SDK clients hold API keys).
  readonly #providers = new Map<string, Provider>();
  readonly #semaphores = new Map<string, Semaphore>();
  readonly #logger: Logger;
  readonly #recorder: CallRecorder | undefined;
  readonly #budget: BudgetHook | undefined;
  readonly #rateLimit: RateLimitHook | undefined;
  readonly #retry: RetryConfig;
  readonly #estimate: TokenEstimator;
  readonly #env: Readonly<Record<string, string | undefined>>;

  /** @param options - registry, hooks and policies; throws `INVALID_ARGUMENT` on bad `retry` */
  constructor(options: LlmClientOptions) {
    this.registry = options.registry;
    this.#logger = options.logger ?? noopLogger;
    this.#recorder = options.recorder;
    this.#budget = options.budget;
    this.#retry = resolveRetryConfig(options.retry);
    this.#estimate = options.estimateTokens ?? estimateTextTokens;
    this.#env = options.env ?? process.env;
    if (options.rateLimit !== undefined) this.#rateLimit = options.rateLimit;
    else {
      const local = TokenBucketRateLimiter.fromRegistry(options.registry);
      this.#rateLimit = local.limitsAnything ? local : undefined;
    }
  }

  /**
   * Sends a chat completion and returns the assistant turn with usage and cost. Tool-call
   * arguments are returned as raw text, valid JSON or not. See the class description for the
   * retry, budget and error rules.
   */
  async chat(options: ChatOptions): Promise<ChatResult> {
    const startedAtMs = Date.now();
    const startedAt = performance.now();
    const requestId = options.requestId ?? `llm_${randomUUID()}`;
    const log = this.#logger.child({ model: options.model, requestId });
    let state: CallState | undefined;
    try {
      state = this.#begin(options, requestId, log);
      const result = await this.#run(state, startedAt);
      this.#record({
        model: options.model,
        requestId,
        startedAtMs,
        latencyMs: result.latencyMs,
        attempts: result.attempts,
        usage: state.spent.usage,
        usageEstimated: state.spent.estimated,
        costUsd: state.spent.costUsd,
        status: 'ok',
        finishReason: result.finishReason,
        streamed: options.stream === true,
        ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
      });
      log.debug(
        {
          attempts: result.attempts,
          usage: result.usage,
          costUsd: result.costUsd,
          latencyMs: result.latencyMs,
          finishReason: result.finishReason,
        },
        'llm call done',
      );
      return result;
    } catch (err) {
      const error = toTroupeError(err);
      this.#record({
        model: options.model,
        requestId,
        startedAtMs,
        latencyMs: performance.now() - startedAt,
        attempts: state?.attempts ?? 0,
        usage: state?.spent.usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
        usageEstimated: state?.spent.estimated ?? false,
        costUsd: state?.spent.costUsd ?? 0,
        status: 'error',
        error: error.toJSON(),
        streamed: options.stream === true,
        ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
      });
      log.debug({ err: error, attempts: state?.attempts ?? 0 }, 'llm call failed');
      throw error;
    } finally {
      state?.deadline.dispose();
    }
  }

  /** A safe summary: the registry's model names (never keys or SDK clients). */
  toJSON(): { models: string[] } {
    return { models: this.registry.names() };
  }

  #begin(options: ChatOptions, requestId: string, log: Logger): CallState {
    const name = options.model;
    const model = options.endpoint
      ? endpointModelConfig(options.endpoint)
      : this.registry.get(name);
    validateChatOptions(options, model);
    if (options.signal.aborted) throw fromAbortSignal(options.signal);
    const provider = options.endpoint
      ? this.#endpointProvider(options.endpoint, model)
      : this.#provider(name, model);
    const maxTokens = options.maxTokens ?? model.maxTokens;
    const promptTokensEstimate = estimatePromptTokens(
      options.messages,
      options.tools,
      this.#estimate,
    );
    const params = toOpenAIParams(model, {
      messages: options.messages,
      tools: options.tools,
      toolChoice: options.toolChoice,
      temperature: options.temperature,
      topP: options.topP,
      seed: options.seed,
      logprobs: options.logprobs,
      topLogprobs: options.topLogprobs,
      maxTokens,
    });
    return {
      name,
      model,
      options,
      requestId,
      log,
      // Created last: nothing below can throw and leave its timer armed.
      deadline: callDeadline(options.signal, options.totalTimeoutMs, `llm call to "${name}"`),
      provider,
      secret: provider.apiKey === NO_KEY ? undefined : provider.apiKey,
      params,
      promptTokensEstimate,
      worstCase: {
        usd: computeCostUsd(model, promptTokensEstimate, maxTokens),
        tokens: promptTokensEstimate + maxTokens,
      },
      budget: options.budget ?? this.#budget,
      attempts: 0,
      spent: {
        usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
        costUsd: 0,
        estimated: false,
      },
    };
  }

  async #run(state: CallState, startedAt: number): Promise<ChatResult> {
    const { name, model, log, deadline } = state;
    const semaphore = this.#semaphoreFor(name, model);
    log.debug(
      {
        messages: state.options.messages.length,
        promptTokensEstimate: state.promptTokensEstimate,
        worstCase: state.worstCase,
        stream: state.options.stream === true,
      },
      'llm call started',
    );
    for (;;) {
      const outcome = await this.#attempt(state, semaphore);
      if (outcome.ok) return this.#result(state, outcome, startedAt);
      const { failure } = outcome;
      if (!failure.retryable) throw finalError(state, failure);
      if (state.attempts >= this.#retry.maxAttempts) throw givingUp(state, failure);
      if (
        failure.retryAfterMs !== undefined &&
        failure.retryAfterMs > this.#retry.maxRetryAfterMs
      ) {
        throw givingUp(
          state,
          failure,
          `the provider asked to wait ${Math.round(failure.retryAfterMs)} ms (more than maxRetryAfterMs ${this.#retry.maxRetryAfterMs})`,
        );
      }
      const delayMs = failure.retryAfterMs ?? backoffDelayMs(state.attempts + 1, this.#retry);
      if (deadline.atMs !== undefined && Date.now() + delayMs >= deadline.atMs) {
        throw givingUp(
          state,
          failure,
          `the next attempt (in ${Math.round(delayMs)} ms) would start past the deadline`,
        );
      }
      log.warn(
        {
          attempt: state.attempts,
          status: failure.status,
          reason: failure.summary,
          delayMs: Math.round(delayMs),
        },
        'llm attempt failed, retrying',
      );
      await delay(delayMs, deadline.signal);
    }
  }

  async #attempt(state: CallState, semaphore: Semaphore | undefined): Promise<AttemptOutcome> {
    const { signal } = state.deadline;
    const releaseSlot = semaphore === undefined ? undefined : await semaphore.acquire(signal);
    try {
      await this.#waitForRateLimit(state);
      let reservation: BudgetReservation | undefined;
      if (state.budget !== undefined) {
        reservation = await state.budget.reserve(state.worstCase, {
          requestId: state.requestId,
          model: state.name,
          attempt: state.attempts + 1,
          signal,
          ...(state.options.metadata === undefined ? {} : { metadata: state.options.metadata }),
        });
        if (signal.aborted) {
          await this.#release(state, reservation);
          throw fromAbortSignal(signal);
        }
      } else signal.throwIfAborted();
      return await this.#send(state, reservation);
    } catch (err) {
      if (signal.aborted) throw fromAbortSignal(signal);
      throw err;
    } finally {
      releaseSlot?.();
    }
  }

  async #send(
    state: CallState,
    reservation: BudgetReservation | undefined,
  ): Promise<AttemptOutcome> {
    const { options, model, requestId } = state;
    state.attempts += 1;
    const attempt = state.attempts;
    const timer = callDeadline(
      state.deadline.signal,
      model.timeoutMs,
      `llm attempt ${attempt} to "${state.name}"`,
    );
    const assembler = options.stream === true ? new StreamAssembler(requestId) : undefined;
    const requestOptions = {
      signal: timer.signal,
      headers: { 'x-client-request-id': requestId },
    };
    try {
      let completion: ParsedCompletion;
      let providerRequestId: string | null;
      if (assembler === undefined) {
        const { data, response } = await state.provider.sdk.chat.completions
          .create(state.params, requestOptions)
          .withResponse();
        providerRequestId = response.headers.get('x-request-id');
        completion = parseCompletion(data, requestId);
      } else {
        const { data: stream, response } = await state.provider.sdk.chat.completions
          .create(
            { ...state.params, stream: true, stream_options: { include_usage: true } },
            requestOptions,
          )
          .withResponse();
        providerRequestId = response.headers.get('x-request-id');
        for await (const chunk of stream) {
          const deltas = assembler.push(chunk, attempt);
          if (options.onDelta !== undefined) for (const d of deltas) this.#emit(state, d);
        }
        // The SDK ends the iteration quietly when its signal aborts.
        timer.signal.throwIfAborted();
        completion = assembler.finish();
      }
      const usage = completion.usage ?? this.#estimatedUsage(state, completion);
      const costUsd = computeCostUsd(model, usage.promptTokens, usage.completionTokens);
      this.#spend(state, usage, costUsd, completion.usage === undefined);
      if (reservation !== undefined) {
        await this.#settle(state, reservation, { usd: costUsd, tokens: usage.totalTokens });
      }
      return {
        ok: true,
        completion,
        usage,
        costUsd,
        providerRequestId: providerRequestId ?? undefined,
      };
    } catch (err) {
      if (reservation !== undefined) {
        // A stream cut after tokens were generated was billed by the provider: charge an
        // estimate. Anything else produced nothing we know of.
        if (assembler !== undefined && assembler.generatedChars > 0) {
          const completionTokens = Math.ceil(assembler.generatedChars / 4);
          const usage = {
            promptTokens: state.promptTokensEstimate,
            completionTokens,
            totalTokens: state.promptTokensEstimate + completionTokens,
          };
          const costUsd = computeCostUsd(model, usage.promptTokens, completionTokens);
          this.#spend(state, usage, costUsd, true);
          await this.#settle(state, reservation, { usd: costUsd, tokens: usage.totalTokens });
        } else await this.#release(state, reservation);
      }
      if (state.deadline.signal.aborted) throw fromAbortSignal(state.deadline.signal);
      if (timer.signal.aborted) {
        const timeout = fromAbortSignal(timer.signal);
        return {
          ok: false,
          failure: {
            retryable: true,
            code: ErrorCode.TIMEOUT,
            summary: timeout.message,
            cause: timeout,
          },
        };
      }
      return { ok: false, failure: classifyFailure(err, state.secret) };
    } finally {
      timer.dispose();
    }
  }

  #result(
    state: CallState,
    outcome: Extract<AttemptOutcome, { ok: true }>,
    startedAt: number,
  ): ChatResult {
    const { completion } = outcome;
    const result: ChatResult = {
      message: { role: 'assistant', content: completion.content, toolCalls: completion.toolCalls },
      finishReason: completion.finishReason,
      usage: outcome.usage,
      usageEstimated: completion.usage === undefined,
      costUsd: outcome.costUsd,
      latencyMs: performance.now() - startedAt,
      attempts: state.attempts,
      model: state.name,
      providerModel: completion.providerModel ?? state.model.model,
      requestId: state.requestId,
    };
    if (outcome.providerRequestId !== undefined) {
      result.providerRequestId = outcome.providerRequestId;
    }
    if (completion.logprobs !== undefined) result.logprobs = completion.logprobs;
    return result;
  }

  #estimatedUsage(state: CallState, completion: ParsedCompletion): LlmUsage {
    let completionTokens = completion.content === null ? 0 : this.#estimate(completion.content);
    for (const call of completion.toolCalls) {
      completionTokens += this.#estimate(call.name) + this.#estimate(call.argumentsText);
    }
    return {
      promptTokens: state.promptTokensEstimate,
      completionTokens,
      totalTokens: state.promptTokensEstimate + completionTokens,
    };
  }

  #spend(state: CallState, usage: LlmUsage, costUsd: number, estimated: boolean): void {
    const spent = state.spent;
    spent.usage = {
      promptTokens: spent.usage.promptTokens + usage.promptTokens,
      completionTokens: spent.usage.completionTokens + usage.completionTokens,
      totalTokens: spent.usage.totalTokens + usage.totalTokens,
    };
    spent.costUsd += costUsd;
    spent.estimated ||= estimated;
  }

  async #waitForRateLimit(state: CallState): Promise<void> {
    const hook = this.#rateLimit;
    if (hook === undefined) return;
    const { signal, atMs } = state.deadline;
    const tokens = state.worstCase.tokens;
    for (;;) {
      const decision = await hook.acquire(state.name, { tokens, signal });
      if (decision.ok) return;
      const waitMs = Math.max(1, decision.retryAfterMs);
      if (atMs !== undefined && Date.now() + waitMs >= atMs) {
        throw new TroupeError(
          ErrorCode.UNAVAILABLE,
          `model "${state.name}": rate limited for ${Math.round(waitMs)} ms, past the call's deadline`,
          { details: { model: state.name, requestId: state.requestId, retryAfterMs: waitMs } },
        );
      }
      state.log.debug({ waitMs }, 'llm rate limited, waiting');
      await delay(waitMs, signal);
    }
  }

  async #settle(
    state: CallState,
    reservation: BudgetReservation,
    actual: BudgetAmount,
  ): Promise<void> {
    try {
      await state.budget?.settle(reservation.reservationId, actual);
    } catch (err) {
      // The tokens are spent either way; failing the call would only make the caller pay again.
      state.log.error(
        { err, reservationId: reservation.reservationId, actual },
        'budget settle failed',
      );
    }
  }

  async #release(state: CallState, reservation: BudgetReservation): Promise<void> {
    try {
      await state.budget?.release(reservation.reservationId);
    } catch (err) {
      state.log.warn({ err, reservationId: reservation.reservationId }, 'budget release failed');
    }
  }

  #emit(state: CallState, delta: ChatDelta): void {
    try {
      state.options.onDelta?.(delta);
    } catch (err) {
      state.log.warn({ err }, 'onDelta callback threw; ignored');
    }
  }

  #record(record: LlmCallRecord): void {
    if (this.#recorder === undefined) return;
    try {
      this.#recorder.record(record);
    } catch (err) {
      this.#logger.warn({ err, requestId: record.requestId }, 'call recorder threw; ignored');
    }
  }

  /**
   * The SDK client of a call-supplied endpoint: never a key (the endpoint is the caller's, not
   * the cluster's), cached per base URL.
   */
  #endpointProvider(endpoint: ModelEndpoint, model: ModelConfig): Provider {
    const key = endpointProviderKey(endpoint);
    const cached = this.#providers.get(key);
    if (cached !== undefined) return cached;
    const sdk = new OpenAI({
      baseURL: model.baseURL,
      apiKey: NO_KEY,
      organization: null,
      project: null,
      maxRetries: 0,
      timeout: model.timeoutMs,
      logLevel: 'off',
    });
    const provider = { apiKey: NO_KEY, sdk };
    this.#providers.set(key, provider);
    return provider;
  }

  #semaphoreFor(name: string, model: ModelConfig): Semaphore | undefined {
    if (model.maxConcurrency === undefined) return undefined;
    let semaphore = this.#semaphores.get(name);
    if (semaphore === undefined) {
      semaphore = new Semaphore(model.maxConcurrency);
      this.#semaphores.set(name, semaphore);
    }
    return semaphore;
  }

  /** The SDK client for a model, with the key read from the environment now. */
  #provider(name: string, model: ModelConfig): Provider {
    let apiKey = NO_KEY;
    if (model.apiKeyEnv !== undefined) {
      const value = this.#env[model.apiKeyEnv];
      if (value === undefined || value === '') {
        throw new TroupeError(
          ErrorCode.UNAUTHENTICATED,
          `model "${name}": environment variable ${model.apiKeyEnv} (its apiKeyEnv) is not set`,
          { details: { model: name, apiKeyEnv: model.apiKeyEnv } },
        );
      }
      apiKey = value;
    }
    const cached = this.#providers.get(name);
    if (cached !== undefined && cached.apiKey === apiKey) return cached;
    const sdk = new OpenAI({
      baseURL: model.baseURL,
      apiKey,
      // Explicit nulls: otherwise the SDK reads OPENAI_ORG_ID/OPENAI_PROJECT_ID and sends them
      // to whatever server this model points at.
      organization: null,
      project: null,
      maxRetries: 0,
      timeout: model.timeoutMs,
      logLevel: 'off',
      ...(model.headers === undefined ? {} : { defaultHeaders: model.headers }),
    });
    const provider = { apiKey, sdk };
    this.#providers.set(name, provider);
    return provider;
  }
}

function failureDetails(state: CallState, failure: AttemptFailure): Record<string, unknown> {
  const details: Record<string, unknown> = {
    model: state.name,
    requestId: state.requestId,
    attempts: state.attempts,
  };
  if (failure.status !== undefined) details.status = failure.status;
  if (failure.retryAfterMs !== undefined) details.retryAfterMs = failure.retryAfterMs;
  if (failure.providerCode !== undefined) details.providerCode = failure.providerCode;
  return details;
}

/** The error of a failure that is not retried. */
function finalError(state: CallState, failure: AttemptFailure): TroupeError {
  return new TroupeError(failure.code, `model "${state.name}": ${failure.summary}`, {
    retryable: false,
    cause: failure.cause,
    details: failureDetails(state, failure),
  });
}

/** The error when retrying stops: `UNAVAILABLE`, retryable later. */
function givingUp(state: CallState, failure: AttemptFailure, why?: string): TroupeError {
  const reason = why === undefined ? failure.summary : `${why}; last failure: ${failure.summary}`;
  return new TroupeError(
    ErrorCode.UNAVAILABLE,
    `model "${state.name}": gave up after ${state.attempts} attempt(s): ${reason}`,
    { retryable: true, cause: failure.cause, details: failureDetails(state, failure) },
  );
}
