import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { type ErrorCode, ErrorCode as Code } from '@troupe/proto';
import { MalformedResponseError } from './malformed-response-error';
import { redact } from './redact';
import { parseRetryAfterMs } from './retry-after';

/** What went wrong in one attempt, with everything needed to decide on a retry. */
export interface AttemptFailure {
  /** Whether another attempt may succeed. */
  retryable: boolean;
  /** The code the caller gets when this failure is final and not retryable. */
  code: ErrorCode;
  /** One line for messages and logs, secrets redacted: `HTTP 429: Rate limit reached`. */
  summary: string;
  /** HTTP status, when there was a response. */
  status?: number;
  /** The provider's requested wait, when it sent one. */
  retryAfterMs?: number;
  /** The provider's error code (`rate_limit_exceeded`, `context_length_exceeded`, …). */
  providerCode?: string;
  /**
   * A sanitised stand-in for the SDK error (name and redacted message only): SDK errors carry
   * response headers and bodies, which may echo credentials, so they never become a cause.
   */
  cause: Error;
}

const NON_RETRYABLE_CODES: Readonly<Record<number, ErrorCode>> = {
  400: Code.INVALID_ARGUMENT,
  401: Code.UNAUTHENTICATED,
  403: Code.PERMISSION_DENIED,
  404: Code.NOT_FOUND,
  413: Code.INVALID_ARGUMENT,
  422: Code.INVALID_ARGUMENT,
};

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function sanitized(name: string, message: string): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}

/** The SDK's APIError with its type parameters spelled out (instanceof yields `any` ones). */
type ProviderApiError = APIError<number | undefined, Headers | undefined, object | undefined>;

function providerMessage(err: ProviderApiError, secret: string | undefined): string {
  const body = err.error as { message?: unknown } | null | undefined;
  const text = typeof body?.message === 'string' ? body.message : err.message;
  return redact(text.replace(/\s+/g, ' ').trim().slice(0, 500), secret);
}

function connectionDetail(err: APIConnectionError): string {
  const cause = err.cause as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = cause?.code ?? cause?.cause?.code;
  return typeof code === 'string' ? `${err.message} (${code})` : err.message;
}

// By name, not instanceof: undici's errors come from Node's own realm, which differs from the
// caller's under a vm context (jest), so `instanceof TypeError` would miss them.
function isNamed(err: unknown, name: string): err is Error {
  return typeof err === 'object' && err !== null && (err as { name?: unknown }).name === name;
}

function isErrorLike(err: unknown): err is Error {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { message?: unknown }).message === 'string' &&
    typeof (err as { name?: unknown }).name === 'string'
  );
}

function isNetworkTypeError(err: unknown): err is TypeError {
  if (!isNamed(err, 'TypeError')) return false;
  if (err.message === 'terminated' || err.message === 'fetch failed') return true;
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^(UND_ERR|ECONN|EPIPE|ETIMEDOUT|EAI_AGAIN)/.test(code);
}

/**
 * Classifies an error thrown by one attempt (the SDK call, body parsing or stream assembly).
 * Aborts are not handled here: the caller checks its signals first.
 */
export function classifyFailure(err: unknown, secret: string | undefined): AttemptFailure {
  if (err instanceof APIUserAbortError) {
    return {
      retryable: false,
      code: Code.CANCELLED,
      summary: 'request aborted',
      cause: sanitized(err.name, 'request aborted'),
    };
  }
  if (err instanceof APIConnectionTimeoutError) {
    return {
      retryable: true,
      code: Code.UNAVAILABLE,
      summary: 'connection timed out',
      cause: sanitized('APIConnectionTimeoutError', 'connection timed out'),
    };
  }
  if (err instanceof APIConnectionError) {
    const summary = redact(`connection error: ${connectionDetail(err)}`, secret);
    return {
      retryable: true,
      code: Code.UNAVAILABLE,
      summary,
      cause: sanitized('APIConnectionError', summary),
    };
  }
  if (err instanceof APIError) return classifyApiError(err as ProviderApiError, secret);
  return classifyOther(err, secret);
}

function classifyApiError(err: ProviderApiError, secret: string | undefined): AttemptFailure {
  const message = providerMessage(err, secret);
  const providerCode = typeof err.code === 'string' ? err.code : undefined;
  const status = err.status;
  if (status === undefined) {
    // An error event inside an SSE stream: the server failed mid-generation.
    const summary = `stream error: ${message}`;
    return {
      retryable: true,
      code: Code.UNAVAILABLE,
      summary,
      ...(providerCode === undefined ? {} : { providerCode }),
      cause: sanitized('APIError', summary),
    };
  }
  const summary = `HTTP ${status}: ${message}`;
  const shouldRetry = err.headers?.get('x-should-retry');
  const retryable =
    shouldRetry === 'true' ? true : shouldRetry === 'false' ? false : isRetryableStatus(status);
  const retryAfterMs = parseRetryAfterMs(err.headers);
  return {
    retryable,
    code:
      status >= 500 || isRetryableStatus(status)
        ? Code.UNAVAILABLE
        : (NON_RETRYABLE_CODES[status] ?? Code.INVALID_ARGUMENT),
    summary,
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(providerCode === undefined ? {} : { providerCode }),
    cause: sanitized(err.constructor.name, summary),
  };
}

function classifyOther(err: unknown, secret: string | undefined): AttemptFailure {
  if (err instanceof MalformedResponseError || isNamed(err, 'SyntaxError')) {
    const summary = redact(`malformed response: ${err.message}`, secret);
    return {
      retryable: true,
      code: Code.UNAVAILABLE,
      summary,
      cause: sanitized('MalformedResponseError', summary),
    };
  }
  if (isNetworkTypeError(err)) {
    // undici reports a connection dropped while reading the body as TypeError('terminated').
    const summary = redact(`connection error: ${err.message}`, secret);
    return {
      retryable: true,
      code: Code.UNAVAILABLE,
      summary,
      cause: sanitized('TypeError', summary),
    };
  }
  const message = isErrorLike(err) ? err.message : String(err);
  const summary = redact(`unexpected error: ${message}`, secret);
  return {
    retryable: false,
    code: Code.INTERNAL,
    summary,
    cause: sanitized(isErrorLike(err) ? err.name : 'Error', summary),
  };
}
