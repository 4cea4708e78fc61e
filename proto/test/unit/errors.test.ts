import { z } from 'zod';
import {
  cancelledError,
  ErrorCode,
  errorCode,
  fromAbortSignal,
  fromZodError,
  MAX_LISTED_ISSUES,
  hasErrorCode,
  hasReason,
  invalidArgument,
  isBudgetExhausted,
  isBusy,
  isCancelled,
  isErrorCode,
  isInvalidArgument,
  isNotFound,
  isRetryable,
  isTimeout,
  isTroupeError,
  isUnavailable,
  parseWith,
  someCause,
  timeoutError,
  toTroupeError,
  TroupeError,
} from '@troupe/proto';

const ALL_CODES = Object.values(ErrorCode);

describe('ErrorCode', () => {
  it('is the closed set of the architecture plus UNAUTHENTICATED', () => {
    expect([...ALL_CODES].sort()).toEqual(
      [
        'ALREADY_EXISTS',
        'BUDGET_EXHAUSTED',
        'BUSY',
        'CANCELLED',
        'INTERNAL',
        'INVALID_ARGUMENT',
        'NOT_FOUND',
        'PERMISSION_DENIED',
        'TIMEOUT',
        'UNAUTHENTICATED',
        'UNAVAILABLE',
      ].sort(),
    );
    for (const [key, value] of Object.entries(ErrorCode)) expect(key).toBe(value);
  });

  it('isErrorCode accepts only the known strings', () => {
    expect(isErrorCode('BUSY')).toBe(true);
    expect(isErrorCode('busy')).toBe(false);
    expect(isErrorCode('OK')).toBe(false);
    expect(isErrorCode(3)).toBe(false);
    expect(isErrorCode(undefined)).toBe(false);
  });
});

describe('TroupeError', () => {
  it('defaults retryable to true exactly for UNAVAILABLE, TIMEOUT and BUSY', () => {
    const retryable = ALL_CODES.filter((code) => new TroupeError(code, 'x').retryable).sort();
    expect(retryable).toEqual(['BUSY', 'TIMEOUT', 'UNAVAILABLE']);
  });

  it('lets the caller override retryable both ways', () => {
    expect(new TroupeError('UNAVAILABLE', 'x', { retryable: false }).retryable).toBe(false);
    expect(new TroupeError('INTERNAL', 'x', { retryable: true }).retryable).toBe(true);
  });

  it('is an Error named TroupeError with code, message, cause and details', () => {
    const cause = new Error('root');
    const err = new TroupeError('NOT_FOUND', 'job j1 not found', {
      cause,
      details: { jobId: 'j1' },
    });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('TroupeError');
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toBe('job j1 not found');
    expect(err.cause).toBe(cause);
    expect(err.details).toEqual({ jobId: 'j1' });
    expect(String(err)).toBe('TroupeError: job j1 not found');
    expect(err.stack).toContain('job j1 not found');
  });

  it('has no cause property when none is given', () => {
    expect('cause' in new TroupeError('INTERNAL', 'x')).toBe(false);
  });

  it('turns an unknown code passed from untyped code into INTERNAL', () => {
    expect(new TroupeError('NOPE' as ErrorCode, 'x').code).toBe('INTERNAL');
  });

  it('serialises to {code, message, retryable, details} without the cause', () => {
    const err = new TroupeError('BUSY', 'c1 is running', {
      cause: new Error('secret internals'),
      details: { actor: 'counter/c1' },
    });
    expect(JSON.parse(JSON.stringify(err))).toEqual({
      code: 'BUSY',
      message: 'c1 is running',
      retryable: true,
      details: { actor: 'counter/c1' },
    });
    expect(new TroupeError('INTERNAL', 'x').toJSON()).toEqual({
      code: 'INTERNAL',
      message: 'x',
      retryable: false,
    });
    expect(JSON.stringify(err)).not.toContain('secret');
  });
});

describe('identification by code along the cause chain', () => {
  it('recognises a look-alike by name and code, not instanceof', () => {
    const lookAlike = { name: 'TroupeError', code: 'NOT_FOUND', message: 'gone' };
    expect(isTroupeError(lookAlike)).toBe(true);
    expect(errorCode(lookAlike)).toBe('NOT_FOUND');
    expect(isNotFound(lookAlike)).toBe(true);
    expect(isTroupeError({ name: 'TroupeError', code: 'WHATEVER' })).toBe(false);
    expect(isTroupeError({ name: 'Error', code: 'NOT_FOUND' })).toBe(false);
    expect(isTroupeError(new Error('x'))).toBe(false);
    expect(isTroupeError(null)).toBe(false);
    expect(isTroupeError('NOT_FOUND')).toBe(false);
  });

  it('isTroupeError looks at the value itself only', () => {
    const wrapped = new Error('outer', { cause: new TroupeError('BUSY', 'inner') });
    expect(isTroupeError(wrapped)).toBe(false);
    expect(errorCode(wrapped)).toBe('BUSY');
  });

  it('takes the outermost code and finds every code of the chain', () => {
    const inner = timeoutError('ask counter/c1', 2000);
    const outer = new TroupeError('UNAVAILABLE', 'activation failed', { cause: inner });
    const wrapper = new Error('while posting', { cause: outer });
    expect(errorCode(wrapper)).toBe('UNAVAILABLE');
    expect(isUnavailable(wrapper)).toBe(true);
    expect(isTimeout(wrapper)).toBe(true);
    expect(isBusy(wrapper)).toBe(false);
    expect(hasErrorCode(wrapper, 'TIMEOUT')).toBe(true);
    expect(hasErrorCode(wrapper, 'INTERNAL')).toBe(false);
  });

  it('reads retryable from the error that decides the code', () => {
    const inner = new TroupeError('UNAVAILABLE', 'down');
    expect(isRetryable(new Error('wrap', { cause: inner }))).toBe(true);
    const fatal = new TroupeError('INTERNAL', 'gave up', { cause: inner });
    expect(isRetryable(fatal)).toBe(false);
    const forced = new TroupeError('UNAVAILABLE', 'no', { retryable: false });
    expect(isRetryable(forced)).toBe(false);
    expect(isRetryable({ name: 'TroupeError', code: 'BUSY' })).toBe(true);
  });

  it('treats unknown values as INTERNAL and not retryable', () => {
    for (const value of [new Error('x'), 'boom', null, undefined, 42, { message: 'm' }]) {
      expect(errorCode(value)).toBe('INTERNAL');
      expect(isRetryable(value)).toBe(false);
      expect(isTimeout(value)).toBe(false);
    }
  });

  it('survives cycles and very deep chains', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(errorCode(a)).toBe('INTERNAL');
    expect(isTimeout(a)).toBe(false);

    const selfCaused = new TroupeError('BUSY', 'me');
    (selfCaused as { cause?: unknown }).cause = selfCaused;
    expect(errorCode(selfCaused)).toBe('BUSY');

    let deep: unknown = new TroupeError('NOT_FOUND', 'bottom');
    for (let i = 0; i < 1000; i++) deep = new Error(`level ${i}`, { cause: deep });
    expect(isNotFound(deep)).toBe(false); // beyond the bounded depth
    expect(errorCode(deep)).toBe('INTERNAL');
  });

  it('does not let a throwing getter escape', () => {
    const hostile = {};
    Object.defineProperty(hostile, 'name', {
      get() {
        throw new Error('gotcha');
      },
    });
    expect(errorCode(hostile)).toBe('INTERNAL');
    expect(isTroupeError(hostile)).toBe(false);
  });

  it('maps TimeoutError to TIMEOUT and AbortError to CANCELLED', async () => {
    const timeout = AbortSignal.timeout(1);
    await new Promise((resolve) => timeout.addEventListener('abort', resolve));
    expect(errorCode(timeout.reason)).toBe('TIMEOUT');
    expect(isRetryable(timeout.reason)).toBe(true);

    const controller = new AbortController();
    controller.abort();
    expect(errorCode(controller.signal.reason)).toBe('CANCELLED');
    expect(isCancelled(controller.signal.reason)).toBe(true);
    expect(isRetryable(controller.signal.reason)).toBe(false);
  });

  it('lets an AbortError defer to a more specific cause (Node sets it to the signal reason)', () => {
    const timedOut = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    const abortError = new DOMException('The operation was aborted', 'AbortError');
    (abortError as { cause?: unknown }).cause = timedOut;
    expect(errorCode(abortError)).toBe('TIMEOUT');
    expect(isTimeout(abortError)).toBe(true);
    expect(isCancelled(abortError)).toBe(false);

    const shutdown = new Error('aborted', { cause: cancelledError('shutdown') });
    shutdown.name = 'AbortError';
    expect(errorCode(shutdown)).toBe('CANCELLED');
    expect(toTroupeError(shutdown).message).toBe('cancelled: shutdown');
    expect(toTroupeError(shutdown).details).toEqual({ reason: 'shutdown' });
  });

  it('has one predicate per common code', () => {
    expect(isBudgetExhausted(new TroupeError('BUDGET_EXHAUSTED', 'x'))).toBe(true);
    expect(isInvalidArgument(invalidArgument('f', 'rule'))).toBe(true);
    expect(isBusy(new TroupeError('BUSY', 'x'))).toBe(true);
    expect(isCancelled(cancelledError('user'))).toBe(true);
    expect(isNotFound(new TroupeError('ALREADY_EXISTS', 'x'))).toBe(false);
  });
});

describe('reasons along the cause chain', () => {
  it('finds a reason on the error or any cause, and keeps it in toJSON', () => {
    const fenced = new TroupeError('UNAVAILABLE', 'x', { reason: 'FENCED', retryable: false });
    expect(fenced.reason).toBe('FENCED');
    expect(fenced.toJSON()).toEqual({
      code: 'UNAVAILABLE',
      message: 'x',
      retryable: false,
      reason: 'FENCED',
    });
    const wrapped = new Error('outer', {
      cause: new TroupeError('INTERNAL', 'mid', { cause: fenced }),
    });
    expect(hasReason(wrapped, 'FENCED')).toBe(true);
    expect(hasReason(wrapped, 'STORE_UNAVAILABLE')).toBe(false);
    expect(toTroupeError(new Error('plain', { cause: fenced })).reason).toBe('FENCED');
    expect(hasReason(new TroupeError('UNAVAILABLE', 'x'), 'FENCED')).toBe(false);
    expect(hasReason(undefined, 'FENCED')).toBe(false);
  });

  it('ignores an unknown reason and reads the details flags of older versions', () => {
    const unknown = new TroupeError('UNAVAILABLE', 'x', { reason: 'NEW' as never });
    expect('reason' in unknown).toBe(false);
    const old = {
      name: 'TroupeError',
      code: 'UNAVAILABLE',
      message: 'x',
      details: { fenced: true },
    };
    expect(hasReason(old, 'FENCED')).toBe(true);
    const store = new TroupeError('UNAVAILABLE', 'x', { details: { storeUnavailable: true } });
    expect(hasReason(new Error('w', { cause: store }), 'STORE_UNAVAILABLE')).toBe(true);
  });

  it('someCause tests every link, stopping at cycles', () => {
    const a = new Error('a');
    const b = Object.assign(new Error('b'), { name: 'NoResponders' });
    a.cause = b;
    b.cause = a;
    expect(someCause(a, (e) => e instanceof Error && e.name === 'NoResponders')).toBe(true);
    expect(someCause(a, (e) => e instanceof Error && e.name === 'Other')).toBe(false);
  });
});

describe('toTroupeError', () => {
  it('keeps a TroupeError as is', () => {
    const err = new TroupeError('BUSY', 'x');
    expect(toTroupeError(err)).toBe(err);
  });

  it('wraps unknown values as INTERNAL with the original as cause and its message', () => {
    const plain = new Error('disk full');
    const fromError = toTroupeError(plain);
    expect(fromError).toBeInstanceOf(TroupeError);
    expect(fromError.code).toBe('INTERNAL');
    expect(fromError.message).toBe('disk full');
    expect(fromError.cause).toBe(plain);
    expect(fromError.retryable).toBe(false);

    expect(toTroupeError('boom').message).toBe('boom');
    expect(toTroupeError(null).message).toBe('unknown error (null)');
    expect(toTroupeError(undefined).message).toBe('unknown error (undefined)');
    expect(toTroupeError({ foo: 1 }).message).toBe('unknown error ({"foo":1})');
    expect(toTroupeError(null).code).toBe('INTERNAL');
  });

  it('rebuilds a look-alike into a real instance with its code, retryable and details', () => {
    const lookAlike = {
      name: 'TroupeError',
      code: 'UNAVAILABLE',
      message: 'host h1 full',
      retryable: false,
      details: { hostId: 'h1' },
    };
    const err = toTroupeError(lookAlike);
    expect(err).toBeInstanceOf(TroupeError);
    expect(err).toMatchObject({ code: 'UNAVAILABLE', message: 'host h1 full', retryable: false });
    expect(err.details).toEqual({ hostId: 'h1' });
  });

  it('maps abort and timeout reasons', () => {
    const controller = new AbortController();
    controller.abort();
    expect(toTroupeError(controller.signal.reason).code).toBe('CANCELLED');
    const timeout = new DOMException('timed out', 'TimeoutError');
    const err = toTroupeError(timeout);
    expect(err.code).toBe('TIMEOUT');
    expect(err.retryable).toBe(true);
    expect(err.cause).toBe(timeout);
  });

  it('takes the code of a wrapped TroupeError but the outer message', () => {
    const err = toTroupeError(
      new Error('loading job', { cause: new TroupeError('NOT_FOUND', 'j') }),
    );
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toBe('loading job');
  });
});

describe('helpers', () => {
  it('cancelledError carries its reason and is not retryable', () => {
    const err = cancelledError('shutdown');
    expect(err).toMatchObject({ code: 'CANCELLED', retryable: false });
    expect(err.message).toBe('cancelled: shutdown');
    expect(err.details).toEqual({ reason: 'shutdown' });
    expect(cancelledError('job j7 cancelled by alice').details).toEqual({
      reason: 'job j7 cancelled by alice',
    });
  });

  it('timeoutError names what timed out, is retryable, and its stack names the creator', () => {
    function waitForReply(): TroupeError {
      return timeoutError('ask counter/c1', 2000);
    }
    const err = waitForReply();
    expect(err).toMatchObject({ code: 'TIMEOUT', retryable: true });
    expect(err.message).toBe('ask counter/c1 timed out after 2000 ms');
    expect(err.details).toEqual({ what: 'ask counter/c1', timeoutMs: 2000 });
    const frames = err.stack!.split('\n').slice(1);
    expect(frames[0]).toContain('waitForReply');
  });

  it('fromAbortSignal gives the reason of the signal as a TroupeError', async () => {
    const user = new AbortController();
    user.abort();
    expect(fromAbortSignal(user.signal).code).toBe('CANCELLED');

    const shutdown = new AbortController();
    const reason = cancelledError('shutdown');
    shutdown.abort(reason);
    expect(fromAbortSignal(shutdown.signal)).toBe(reason);

    const named = new AbortController();
    named.abort('user');
    expect(fromAbortSignal(named.signal).details).toEqual({ reason: 'user' });

    const crashed = new AbortController();
    const boom = new Error('boom');
    crashed.abort(boom);
    const err = fromAbortSignal(crashed.signal);
    expect(err.code).toBe('CANCELLED');
    expect(err.cause).toBe(boom);

    const timeout = AbortSignal.timeout(1);
    await new Promise((resolve) => timeout.addEventListener('abort', resolve));
    expect(fromAbortSignal(timeout).code).toBe('TIMEOUT');
  });

  it('invalidArgument names the field, the rule and the value', () => {
    const err = invalidArgument('spec.tasks[2].image', 'must be a non-empty string', 42);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.retryable).toBe(false);
    expect(err.message).toBe('`spec.tasks[2].image`: must be a non-empty string (got 42)');
    expect(err.details).toEqual({
      field: 'spec.tasks[2].image',
      rule: 'must be a non-empty string',
    });
    expect(invalidArgument('name', 'is required').message).toBe('`name`: is required');
    expect(invalidArgument('kind', 'must match x', 'Bad.Kind').message).toBe(
      '`kind`: must match x (got "Bad.Kind")',
    );
  });

  it('invalidArgument renders huge or multi-line values short and on one line', () => {
    const err = invalidArgument('prompt', 'too long', `${'x'.repeat(10_000)}\nline2`);
    expect(err.message.length).toBeLessThan(120);
    expect(err.message).not.toContain('\n');
    expect(err.message).toContain('…');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(invalidArgument('x', 'bad', cyclic).message).toBe('`x`: bad (got an object)');
    expect(invalidArgument('x', 'bad', 10n).message).toBe('`x`: bad (got 10n)');
  });
});

describe('zod errors', () => {
  const Spec = z.object({
    name: z.string().min(1),
    tasks: z.array(z.object({ image: z.string(), 'max-steps': z.number().int().optional() })),
    labels: z.record(z.string(), z.string()).optional(),
  });

  it('fromZodError lists every issue as <path>: <rule>, prefixed', () => {
    const result = Spec.safeParse({
      name: '',
      tasks: [{ image: 'ok' }, { image: 'ok' }, { image: 42, 'max-steps': 1.5 }],
    });
    expect(result.success).toBe(false);
    const err = fromZodError(result.error!, { prefix: 'spec' });
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.retryable).toBe(false);
    const issues = (err.details as { issues: { field: string; rule: string }[] }).issues;
    expect(issues.map((i) => i.field).sort()).toEqual(
      ['spec.name', 'spec.tasks[2].image', 'spec.tasks[2]["max-steps"]'].sort(),
    );
    for (const { field, rule } of issues) {
      expect(rule.length).toBeGreaterThan(0);
      expect(err.message).toContain(`${field}: ${rule}`);
    }
    expect(err.message.split('; ')).toHaveLength(3);
  });

  it('fromZodError cuts a key too long to show (found by the grpc fuzz target)', () => {
    const key = 'y'.repeat(170_000);
    const result = z
      .object({ labels: z.record(z.string().max(63), z.string()) })
      .safeParse({ labels: { [key]: 'v' } });
    const err = fromZodError(result.error!, { prefix: 'spec' });
    const field = `spec.labels["${'y'.repeat(32)}…" (170000 characters)]`;
    expect((err.details as { issues: { field: string }[] }).issues[0]!.field).toBe(field);
    expect(err.message.startsWith(`${field}: `)).toBe(true);
    expect(err.message.length).toBeLessThan(300);
  });

  it('fromZodError lists at most MAX_LISTED_ISSUES issues and counts the rest', () => {
    const result = z
      .array(z.object({ id: z.string() }))
      .safeParse(Array.from({ length: 5_000 }, (_, i) => i));
    const err = fromZodError(result.error!, { prefix: 'spec.tasks' });
    const details = err.details as { issues: { field: string }[]; issueCount: number };
    expect(details.issues).toHaveLength(MAX_LISTED_ISSUES);
    expect(details.issues[0]!.field).toBe('spec.tasks[0]');
    expect(details.issueCount).toBe(5_000);
    expect(err.message).toMatch(/^spec\.tasks\[0\]: .*; … and 4980 more issues$/);
    expect(err.message.length).toBeLessThan(3_000);
  });

  it('reports root issues and paths without a prefix', () => {
    const rootErr = fromZodError(z.string().safeParse(1).error!);
    expect((rootErr.details as { issues: { field: string }[] }).issues[0]!.field).toBe('(root)');
    const nested = fromZodError(Spec.safeParse({ name: 'n', tasks: [{}] }).error!);
    expect(nested.message).toMatch(/^tasks\[0\]\.image: /);
    const prefixedRoot = fromZodError(z.string().safeParse(1).error!, { prefix: 'spec' });
    expect(prefixedRoot.message).toMatch(/^spec: /);
  });

  it('parseWith returns the parsed value or throws INVALID_ARGUMENT', () => {
    const Schema = z.object({ n: z.number().default(3) });
    expect(parseWith(Schema, {})).toEqual({ n: 3 });
    let thrown: unknown;
    try {
      parseWith(Schema, { n: 'x' }, { prefix: 'msg' });
    } catch (e) {
      thrown = e;
    }
    expect(isInvalidArgument(thrown)).toBe(true);
    expect((thrown as TroupeError).message).toMatch(/^msg\.n: /);
  });
});
