import { APIConnectionError, APIError } from 'openai';
import { classifyFailure } from '../../src/internal/classify-failure';
import { redact } from '../../src/internal/redact';

const SECRET = 'sk-proj-abcdefghijklmnop1234';

function apiError(status: number, message: string, headers: Record<string, string> = {}): APIError {
  return APIError.generate(
    status,
    { error: { message, code: 'c1' } },
    undefined,
    new Headers(headers),
  );
}

describe('classifyFailure', () => {
  it.each([
    [408, true, 'UNAVAILABLE'],
    [409, true, 'UNAVAILABLE'],
    [429, true, 'UNAVAILABLE'],
    [500, true, 'UNAVAILABLE'],
    [503, true, 'UNAVAILABLE'],
    [400, false, 'INVALID_ARGUMENT'],
    [401, false, 'UNAUTHENTICATED'],
    [403, false, 'PERMISSION_DENIED'],
    [404, false, 'NOT_FOUND'],
    [418, false, 'INVALID_ARGUMENT'],
  ])('HTTP %i → retryable %s, code %s', (status, retryable, code) => {
    const failure = classifyFailure(apiError(status, 'nope'), undefined);
    expect(failure).toMatchObject({ retryable, code, status, providerCode: 'c1' });
    expect(failure.summary).toBe(`HTTP ${status}: nope`);
  });

  it('honours x-should-retry and reads retry-after', () => {
    expect(
      classifyFailure(apiError(500, 'x', { 'x-should-retry': 'false' }), undefined).retryable,
    ).toBe(false);
    expect(
      classifyFailure(apiError(400, 'x', { 'x-should-retry': 'true' }), undefined).retryable,
    ).toBe(true);
    expect(
      classifyFailure(apiError(429, 'x', { 'retry-after': '3' }), undefined).retryAfterMs,
    ).toBe(3_000);
  });

  it('retries connection errors, stream error events, malformed bodies and dropped bodies', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(classifyFailure(new APIConnectionError({ cause }), undefined)).toMatchObject({
      retryable: true,
      summary: 'connection error: Connection error. (ECONNREFUSED)',
    });
    expect(
      classifyFailure(
        new APIError(undefined, { message: 'overloaded' }, undefined, undefined),
        undefined,
      ),
    ).toMatchObject({
      retryable: true,
      summary: 'stream error: overloaded',
    });
    expect(
      classifyFailure(new SyntaxError('Unexpected end of JSON input'), undefined).retryable,
    ).toBe(true);
    expect(classifyFailure(new TypeError('terminated'), undefined).retryable).toBe(true);
  });

  it('treats anything else as an INTERNAL bug, not retried', () => {
    expect(classifyFailure(new TypeError('x is not a function'), undefined)).toMatchObject({
      retryable: false,
      code: 'INTERNAL',
    });
  });

  it('redacts the key and key-shaped strings from summaries and causes', () => {
    const failure = classifyFailure(
      apiError(401, `bad key ${SECRET} and sk-other-0123456789`),
      SECRET,
    );
    expect(failure.summary).toBe('HTTP 401: bad key [redacted] and [redacted]');
    expect(failure.cause.message).not.toContain(SECRET);
    expect(redact('no secrets here', undefined)).toBe('no secrets here');
  });
});
