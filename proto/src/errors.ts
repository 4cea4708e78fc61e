import type { z } from 'zod';
import { causeChain, readProperty } from './internal/cause-chain';
import { describeValue } from './internal/describe-value';

/**
 * The closed set of Troupe error codes (ARCHITECTURE.md §4, plus `UNAUTHENTICATED` for the gRPC
 * API). Errors cross process boundaries as one of these codes; retry decisions read
 * {@link TroupeError.retryable}, never the message.
 */
export const ErrorCode = {
  /** The caller sent something invalid; the message names the field and the rule broken. */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** The addressed job, actor, artifact or node does not exist. */
  NOT_FOUND: 'NOT_FOUND',
  /** A create collided with an existing entity (a compare-and-set lost, a duplicate id). */
  ALREADY_EXISTS: 'ALREADY_EXISTS',
  /** The target is running and does not accept a directed invocation now. Retryable by default. */
  BUSY: 'BUSY',
  /** A deadline passed before the operation completed. Retryable by default. */
  TIMEOUT: 'TIMEOUT',
  /** The operation was cancelled (by a user, a shutdown or a parent's deadline). */
  CANCELLED: 'CANCELLED',
  /** A budget scope has no room left for the reservation. */
  BUDGET_EXHAUSTED: 'BUDGET_EXHAUSTED',
  /** A dependency or host is unreachable or out of capacity. Retryable by default. */
  UNAVAILABLE: 'UNAVAILABLE',
  /** The caller is known but not allowed to do this. */
  PERMISSION_DENIED: 'PERMISSION_DENIED',
  /** The caller could not be identified (missing or invalid credentials). */
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  /** A bug or an unexpected failure; also what any unknown error becomes. */
  INTERNAL: 'INTERNAL',
} as const;

/** One of the {@link ErrorCode} values. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const ERROR_CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode));

const RETRYABLE_BY_DEFAULT: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCode.UNAVAILABLE,
  ErrorCode.TIMEOUT,
  ErrorCode.BUSY,
]);

/**
 * Why an error happened, when the code alone does not say enough for a caller to act on it: a
 * closed set carried next to the code on the wire (NATS headers, gRPC trailers). Test it with
 * {@link hasReason}, which walks the cause chain.
 */
export const ErrorReason = {
  /** A newer activation owns the actor: this one lost its claim and must stop writing. */
  FENCED: 'FENCED',
  /**
   * A store an actor depends on (its state, an agent's trajectory) is not reachable now:
   * infrastructure trouble the runtime waits out, never the fault of the message being handled.
   */
  STORE_UNAVAILABLE: 'STORE_UNAVAILABLE',
  /**
   * Stored data does not match the hash recorded for it (a memory bank blob or commit record
   * changed behind its store's back): never retried, never silently repaired.
   */
  INTEGRITY: 'INTEGRITY',
  /**
   * A phase's admission rule refused to go on (an RSI target that is not transition-ready, a
   * bank lineage that drifted): a stop of delivery, never retried automatically.
   */
  PROTOCOL: 'PROTOCOL',
  /**
   * No live host hosts the actor's kind right now (the placer's answer while, e.g., a coordinator
   * taking over has not registered its own host yet): one may register soon.
   */
  NO_HOST: 'NO_HOST',
} as const;

/** One of the {@link ErrorReason} values. */
export type ErrorReason = (typeof ErrorReason)[keyof typeof ErrorReason];

const ERROR_REASONS: ReadonlySet<string> = new Set(Object.values(ErrorReason));

/** Whether `value` is one of the {@link ErrorReason} strings. */
export function isErrorReason(value: unknown): value is ErrorReason {
  return typeof value === 'string' && ERROR_REASONS.has(value);
}

/** Whether `value` is one of the {@link ErrorCode} strings. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && ERROR_CODES.has(value);
}

/** Options of the {@link TroupeError} constructor. */
export interface TroupeErrorOptions {
  /**
   * Whether retrying the same operation may succeed.
   * @default true for `UNAVAILABLE`, `TIMEOUT` and `BUSY`, false otherwise
   */
  retryable?: boolean;
  /** The error this one wraps; kept locally, never sent over the wire. */
  cause?: unknown;
  /** Structured, JSON-serialisable facts about the failure; sent over the wire. */
  details?: Record<string, unknown>;
  /** Why it happened, from the closed {@link ErrorReason} set; sent over the wire. */
  reason?: ErrorReason;
}

/** The wire shape of a {@link TroupeError}: what `toJSON()` returns. */
export interface TroupeErrorJson {
  /** The error code. */
  code: ErrorCode;
  /** Human-readable message. */
  message: string;
  /** Whether retrying may succeed. */
  retryable: boolean;
  /** Structured details, when there are any. */
  details?: Record<string, unknown>;
  /** The {@link ErrorReason}, when there is one. */
  reason?: ErrorReason;
}

/**
 * The one error class of Troupe. Identify it by `code` (see {@link errorCode},
 * {@link hasErrorCode}), not `instanceof`: errors decoded from the wire or created by another copy
 * of this package are recognised by `name === 'TroupeError'` and a known `code`.
 */
export class TroupeError extends Error {
  /** The error code. */
  readonly code: ErrorCode;
  /** Whether retrying the same operation may succeed. */
  readonly retryable: boolean;
  /** Structured, JSON-serialisable facts about the failure. */
  // `declare`: no class field is emitted, so the property exists only when details were given.
  declare readonly details?: Record<string, unknown>;
  /** Why it happened (see {@link hasReason}); present only when given. */
  declare readonly reason?: ErrorReason;

  /**
   * @param code - the error code; anything outside {@link ErrorCode} becomes `INTERNAL`
   * @param message - human-readable, naming what failed
   * @param options - retryable override, cause and details
   */
  constructor(code: ErrorCode, message: string, options: TroupeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = isErrorCode(code) ? code : ErrorCode.INTERNAL;
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT.has(this.code);
    if (options.details !== undefined) this.details = options.details;
    if (isErrorReason(options.reason)) this.reason = options.reason;
  }

  /**
   * The wire shape `{code, message, retryable, details, reason}`; the cause is left out on
   * purpose.
   */
  toJSON(): TroupeErrorJson {
    const json: TroupeErrorJson = {
      code: this.code,
      message: this.message,
      retryable: this.retryable,
    };
    if (this.details !== undefined) json.details = this.details;
    if (this.reason !== undefined) json.reason = this.reason;
    return json;
  }
}

// On the prototype rather than as an instance field, so it neither shows up as an own property
// when the error is logged nor can be forgotten by a subclass.
Object.defineProperty(TroupeError.prototype, 'name', {
  value: 'TroupeError',
  writable: true,
  configurable: true,
  enumerable: false,
});

/** What one link of a cause chain says about the failure. */
interface Identified {
  code: ErrorCode;
  retryable: boolean;
  details: Record<string, unknown> | undefined;
  reason: ErrorReason | undefined;
  message: string | undefined;
  /** An `AbortError` only says "aborted": a more specific reason further down the chain wins. */
  weak: boolean;
}

/**
 * The reason an error of an older Troupe version marked with a `details` flag (`{fenced: true}`,
 * `{storeUnavailable: true}`), so errors from a peer not yet upgraded — or rebuilt from JSON written
 * by one — are still recognised.
 */
function legacyReason(details: Record<string, unknown> | undefined): ErrorReason | undefined {
  if (details?.['fenced'] === true) return ErrorReason.FENCED;
  if (details?.['storeUnavailable'] === true) return ErrorReason.STORE_UNAVAILABLE;
  return undefined;
}

const UNDETAILED = { details: undefined, reason: undefined } as const;

function identify(link: unknown): Identified | undefined {
  if (typeof link !== 'object' || link === null) return undefined;
  const name = readProperty(link, 'name');
  const message = readProperty(link, 'message');
  const text = typeof message === 'string' ? message : undefined;
  if (name === 'TroupeError') {
    const code = readProperty(link, 'code');
    if (!isErrorCode(code)) return undefined;
    const retryable = readProperty(link, 'retryable');
    const details = readProperty(link, 'details');
    const reason = readProperty(link, 'reason');
    const record = isPlainRecord(details) ? details : undefined;
    return {
      code,
      retryable: typeof retryable === 'boolean' ? retryable : RETRYABLE_BY_DEFAULT.has(code),
      details: record,
      reason: isErrorReason(reason) ? reason : legacyReason(record),
      message: text,
      weak: false,
    };
  }
  // DOMExceptions from AbortSignal.timeout()/abort(), and any library error using the same names.
  if (name === 'TimeoutError') {
    return { ...UNDETAILED, code: 'TIMEOUT', retryable: true, message: text, weak: false };
  }
  if (name === 'AbortError') {
    return { ...UNDETAILED, code: 'CANCELLED', retryable: false, message: text, weak: true };
  }
  return undefined;
}

/** Identifications along the chain, outermost first, with superseded weak ones removed. */
function identifyChain(err: unknown): Identified[] {
  const found = causeChain(err)
    .map(identify)
    .filter((i): i is Identified => i !== undefined);
  return found.filter((item, index) => !item.weak || !found.slice(index + 1).some((i) => !i.weak));
}

/** The identification that decides an error's code: the outermost one that is not superseded. */
function resolve(err: unknown): Identified | undefined {
  return identifyChain(err)[0];
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether `err` itself is a Troupe error: an object with `name === 'TroupeError'` and a known
 * `code` (so errors from another copy of this package or rebuilt from JSON count). Does not look
 * at the cause chain — use {@link errorCode} or {@link hasErrorCode} for that.
 */
export function isTroupeError(err: unknown): err is TroupeError {
  return (
    typeof err === 'object' &&
    err !== null &&
    readProperty(err, 'name') === 'TroupeError' &&
    isErrorCode(readProperty(err, 'code'))
  );
}

/**
 * The code that describes `err`: the code of the outermost Troupe error in its cause chain, where a
 * `TimeoutError` counts as `TIMEOUT` and an `AbortError` as `CANCELLED` (unless something further
 * down its chain — Node sets an `AbortError`'s cause to the signal's reason — is more specific).
 * Anything unidentifiable is `INTERNAL`.
 */
export function errorCode(err: unknown): ErrorCode {
  return resolve(err)?.code ?? ErrorCode.INTERNAL;
}

/**
 * Whether any error in `err`'s cause chain has `code` (with the `TimeoutError`/`AbortError`
 * mapping of {@link errorCode}). An `UNAVAILABLE` wrapping a `TIMEOUT` is both.
 */
export function hasErrorCode(err: unknown, code: ErrorCode): boolean {
  return identifyChain(err).some((i) => i.code === code);
}

/**
 * Whether retrying may succeed: the `retryable` flag of the error that decides {@link errorCode}.
 * Unknown errors are not retryable.
 */
export function isRetryable(err: unknown): boolean {
  return resolve(err)?.retryable ?? false;
}

/**
 * Whether any Troupe error in `err`'s cause chain carries `reason` — also one decoded from the wire
 * or made by another copy of this package: `hasReason(err, 'FENCED')`.
 */
export function hasReason(err: unknown, reason: ErrorReason): boolean {
  return identifyChain(err).some((i) => i.reason === reason);
}

/**
 * Whether any link of `err`'s cause chain (`err`, `err.cause`, …; cycle-safe and depth-capped)
 * satisfies `test`: for recognising third-party errors (a NATS client error by its name) that
 * carry no Troupe code.
 */
export function someCause(err: unknown, test: (link: unknown) => boolean): boolean {
  return causeChain(err).some(test);
}

/** Whether the cause chain holds a `TIMEOUT` (or a `TimeoutError`). */
export function isTimeout(err: unknown): boolean {
  return hasErrorCode(err, ErrorCode.TIMEOUT);
}

/** Whether the cause chain holds a `CANCELLED` (or an `AbortError` with no more specific cause). */
export function isCancelled(err: unknown): boolean {
  return hasErrorCode(err, ErrorCode.CANCELLED);
}

/** Whether the cause chain holds a `BUSY`. */
export function isBusy(err: unknown): boolean {
  return hasErrorCode(err, ErrorCode.BUSY);
}

/** Whether the cause chain holds a `BUDGET_EXHAUSTED`. */
export function isBudgetExhausted(err: unknown): boolean {
  return hasErrorCode(err, ErrorCode.BUDGET_EXHAUSTED);
}

/** Whether the cause chain holds an `UNAVAILABLE`. */
export function isUnavailable(err: unknown): boolean {
  return hasErrorCode(err, ErrorCode.UNAVAILABLE);
}

/** Whether the cause chain holds a `NOT_FOUND`. */
export function isNotFound(err: unknown): boolean {
  return hasErrorCode(err, ErrorCode.NOT_FOUND);
}

/** Whether the cause chain holds an `INVALID_ARGUMENT`. */
export function isInvalidArgument(err: unknown): boolean {
  return hasErrorCode(err, ErrorCode.INVALID_ARGUMENT);
}

/** A message for anything thrown. */
function messageOf(err: unknown): string {
  if (typeof err === 'string') return err === '' ? 'unknown error (empty string)' : err;
  if (typeof err === 'object' && err !== null) {
    const message = readProperty(err, 'message');
    if (typeof message === 'string' && message !== '') return message;
    const name = readProperty(err, 'name');
    if (typeof name === 'string' && name !== '') return name;
  }
  return `unknown error (${describeValue(err)})`;
}

/**
 * Any thrown value as a {@link TroupeError}. A `TroupeError` instance is returned as is. Otherwise a
 * new error with the code, retryable flag and details that {@link errorCode} finds in the cause
 * chain (so a `TimeoutError` DOMException becomes `TIMEOUT`, an `AbortError` `CANCELLED`, an
 * unknown error `INTERNAL`), `err`'s message and `err` as `cause`.
 */
export function toTroupeError(err: unknown): TroupeError {
  if (err instanceof TroupeError) return err;
  const found = resolve(err);
  if (found === undefined) {
    return new TroupeError(ErrorCode.INTERNAL, messageOf(err), { cause: err });
  }
  const outer = identify(err);
  // An AbortError that defers to its cause (the signal's reason) also takes the reason's message.
  const message =
    outer?.weak === true && found.message !== undefined && found.message !== ''
      ? found.message
      : messageOf(err);
  const options: TroupeErrorOptions = { retryable: found.retryable, cause: err };
  if (found.details !== undefined) options.details = found.details;
  if (found.reason !== undefined) options.reason = found.reason;
  return new TroupeError(found.code, message, options);
}

/** Why an operation was cancelled; any other string is allowed too. */
export const CancelReason = {
  /** A deadline passed. */
  TIMEOUT: 'timeout',
  /** The process is shutting down. */
  SHUTDOWN: 'shutdown',
  /** A user asked for it (for example `troupe cancel`). */
  USER: 'user',
} as const;

/**
 * One of the {@link CancelReason} values, or any other reason string (the `Record<never, never>`
 * intersection keeps editor completion for the known reasons).
 */
export type CancelReason =
  (typeof CancelReason)[keyof typeof CancelReason] | (string & Record<never, never>);

/**
 * A `CANCELLED` error carrying its reason (`details.reason`); pass it to `AbortController.abort()`
 * so everything downstream sees why. Not retryable.
 */
export function cancelledError(
  reason: CancelReason,
  options: { cause?: unknown } = {},
): TroupeError {
  const err = new TroupeError(ErrorCode.CANCELLED, `cancelled: ${reason}`, {
    cause: options.cause,
    details: { reason },
  });
  Error.captureStackTrace(err, cancelledError);
  return err;
}

/**
 * A `TIMEOUT` error (`details: {what, timeoutMs}`), retryable. Create it where the wait starts —
 * before arming the timer — so its stack names the waiter, not the timer callback:
 *
 * ```ts
 * const onTimeout = timeoutError('ask counter/c1', 2_000);
 * const signal = AbortSignal.any([callerSignal, AbortSignal.timeout(2_000)]);
 * // … on abort by the timeout: throw onTimeout;
 * ```
 */
export function timeoutError(
  what: string,
  timeoutMs: number,
  options: { cause?: unknown } = {},
): TroupeError {
  const err = new TroupeError(ErrorCode.TIMEOUT, `${what} timed out after ${timeoutMs} ms`, {
    cause: options.cause,
    details: { what, timeoutMs },
  });
  Error.captureStackTrace(err, timeoutError);
  return err;
}

/**
 * The error for an aborted `signal`: its reason when that identifies itself (a `TroupeError` such as
 * {@link cancelledError}, a `TimeoutError` from `AbortSignal.timeout()` → `TIMEOUT`), otherwise
 * `CANCELLED` with the reason as cause (a string reason becomes the cancel reason).
 */
export function fromAbortSignal(signal: AbortSignal): TroupeError {
  const reason: unknown = signal.reason;
  if (resolve(reason) !== undefined) return toTroupeError(reason);
  if (typeof reason === 'string' && reason !== '') return cancelledError(reason);
  return cancelledError(signal.aborted ? CancelReason.USER : 'not aborted', { cause: reason });
}

/**
 * An `INVALID_ARGUMENT` naming the field, the rule broken and (when given) the value received:
 * `` `spec.tasks[2].image`: must be a non-empty string (got 42) ``. `details` is `{field, rule}`;
 * the value is rendered short and on one line and is not put in `details`.
 */
export function invalidArgument(field: string, rule: string, value?: unknown): TroupeError {
  const got = value === undefined ? '' : ` (got ${describeValue(value)})`;
  return new TroupeError(ErrorCode.INVALID_ARGUMENT, `\`${field}\`: ${rule}${got}`, {
    details: { field, rule },
  });
}

/** One broken rule of an `INVALID_ARGUMENT` from {@link fromZodError}. */
export interface FieldIssue {
  /** Path of the offending field, `a.b[0].c` form, prefixed. */
  field: string;
  /** The rule broken, as the schema words it. */
  rule: string;
}

/** Options of {@link fromZodError} and {@link parseWith}. */
export interface ZodErrorOptions {
  /**
   * Name of the validated value, put before every path (`spec` gives `spec.tasks[0].image`).
   * @default no prefix; issues at the root are reported as `(root)`
   */
  prefix?: string;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/**
 * Longest key a field path shows whole. A longer one (a user's 100,000-character label key) is
 * cut, so the path still fits in the message a server sends back (2 KiB), which names it.
 */
export const MAX_PATH_KEY_CHARS = 64;

function formatPath(prefix: string | undefined, path: readonly PropertyKey[]): string {
  let out = prefix ?? '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'symbol') out += `[${key.toString()}]`;
    else if (key.length > MAX_PATH_KEY_CHARS) {
      out += `[${JSON.stringify(`${key.slice(0, 32)}…`)} (${key.length} characters)]`;
    } else if (IDENTIFIER.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out === '' ? '(root)' : out;
}

/**
 * Most issues an error from {@link fromZodError} lists: a 50,000-element list of wrong elements
 * would otherwise make a message of megabytes (and cost its receiver as much).
 */
export const MAX_LISTED_ISSUES = 20;

/**
 * An `INVALID_ARGUMENT` listing the issues of a zod error as `<path>: <rule>` (joined by `; `),
 * with `details: {issues: [{field, rule}]}`: the first {@link MAX_LISTED_ISSUES}, then
 * `… and N more issues` (and `details.issueCount`, the total) when there are more.
 */
export function fromZodError(error: z.core.$ZodError, options: ZodErrorOptions = {}): TroupeError {
  const issues: FieldIssue[] = error.issues.slice(0, MAX_LISTED_ISSUES).map((issue) => ({
    field: formatPath(options.prefix, issue.path),
    rule: issue.message,
  }));
  const more = error.issues.length - issues.length;
  const message =
    issues.length === 0
      ? `${options.prefix ?? 'input'}: invalid`
      : issues.map((i) => `${i.field}: ${i.rule}`).join('; ') +
        (more > 0 ? `; … and ${more} more issues` : '');
  return new TroupeError(ErrorCode.INVALID_ARGUMENT, message, {
    details: more > 0 ? { issues, issueCount: error.issues.length } : { issues },
    cause: error,
  });
}

/**
 * Parses `value` with a zod schema: the parsed (and defaulted) value, or throws the
 * `INVALID_ARGUMENT` of {@link fromZodError}. Use it at every receive boundary.
 */
export function parseWith<S extends z.ZodType>(
  schema: S,
  value: unknown,
  options: ZodErrorOptions = {},
): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw fromZodError(result.error, options);
  return result.data;
}
