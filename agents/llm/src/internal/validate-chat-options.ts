import { invalidArgument } from '@troupe/proto';
import type { ChatOptions } from '../chat-options';
import type { ModelConfig } from '../model-config';

const ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'tool']);
const REQUEST_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1;
}

/**
 * Checks what the type system cannot (or what untyped callers get wrong); throws
 * `INVALID_ARGUMENT` naming the field. Message contents are never echoed.
 */
export function validateChatOptions(options: ChatOptions, model: ModelConfig): void {
  const signal = options.signal as Partial<AbortSignal> | undefined;
  if (typeof signal?.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw invalidArgument('signal', 'is required (an AbortSignal)');
  }
  if (!Array.isArray(options.messages) || options.messages.length === 0) {
    throw invalidArgument('messages', 'must be a non-empty array');
  }
  options.messages.forEach((message: unknown, index) => {
    const role = (message as { role?: unknown } | null)?.role;
    if (typeof role !== 'string' || !ROLES.has(role)) {
      throw invalidArgument(
        `messages[${index}].role`,
        'must be one of system, user, assistant, tool',
        role,
      );
    }
    const content = (message as { content?: unknown }).content;
    if (role === 'user' && Array.isArray(content)) {
      content.forEach((part: unknown, j) => {
        const p = part as { type?: unknown; url?: unknown; text?: unknown } | null;
        const field = `messages[${index}].content[${j}]`;
        if (p?.type === 'text') {
          if (typeof p.text !== 'string')
            throw invalidArgument(`${field}.text`, 'must be a string');
        } else if (p?.type === 'image') {
          if (
            typeof p.url !== 'string' ||
            !/^(data:image\/[a-z0-9.+-]+;base64,|https:\/\/)/i.test(p.url)
          ) {
            throw invalidArgument(
              `${field}.url`,
              'must be a data:image/…;base64, URL or an https: URL',
            );
          }
        } else {
          throw invalidArgument(`${field}.type`, 'must be text or image', p?.type);
        }
      });
    }
  });
  if (options.maxTokens !== undefined) {
    if (!isPositiveInt(options.maxTokens)) {
      throw invalidArgument('maxTokens', 'must be an integer ≥ 1', options.maxTokens);
    }
    if (model.contextTokens !== undefined && options.maxTokens > model.contextTokens) {
      throw invalidArgument(
        'maxTokens',
        `must be ≤ the model's contextTokens (${model.contextTokens})`,
        options.maxTokens,
      );
    }
  }
  const { temperature, totalTimeoutMs, requestId } = options;
  if (
    temperature !== undefined &&
    (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= 2))
  ) {
    throw invalidArgument('temperature', 'must be a number from 0 to 2', temperature);
  }
  const { topP, seed, topLogprobs } = options;
  if (topP !== undefined && (typeof topP !== 'number' || !(topP >= 0 && topP <= 1))) {
    throw invalidArgument('topP', 'must be a number from 0 to 1', topP);
  }
  if (seed !== undefined && !Number.isSafeInteger(seed)) {
    throw invalidArgument('seed', 'must be an integer', seed);
  }
  if (
    topLogprobs !== undefined &&
    (!Number.isInteger(topLogprobs) || topLogprobs < 0 || topLogprobs > 20)
  ) {
    throw invalidArgument('topLogprobs', 'must be an integer from 0 to 20', topLogprobs);
  }
  if (
    totalTimeoutMs !== undefined &&
    (typeof totalTimeoutMs !== 'number' ||
      !(totalTimeoutMs > 0) ||
      !Number.isFinite(totalTimeoutMs))
  ) {
    throw invalidArgument('totalTimeoutMs', 'must be a number > 0', totalTimeoutMs);
  }
  if (requestId !== undefined && (typeof requestId !== 'string' || !REQUEST_ID.test(requestId))) {
    throw invalidArgument('requestId', 'must match [A-Za-z0-9_.:-]{1,128}', requestId);
  }
}
