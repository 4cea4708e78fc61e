import { Metadata, type ServerErrorResponse, status } from '@grpc/grpc-js';
import { headers, type MsgHdrs } from '@nats-io/transport-node';
import {
  ErrorCode,
  isErrorCode,
  isErrorReason,
  toTroupeError,
  TroupeError,
  type TroupeErrorOptions,
} from './errors';
import { Header } from './headers';
import { readProperty } from './internal/cause-chain';
import { dropTrailingHighSurrogate } from './internal/describe-value';
import {
  MAX_GRPC_DETAILS_CHARS,
  MAX_GRPC_MESSAGE_CHARS,
  MAX_WIRE_DETAILS_CHARS,
  MAX_WIRE_MESSAGE_CHARS,
  toAsciiJson,
  toWellFormed,
  truncateEncoded,
} from './internal/wire-text';

// The one place where errors are converted to and from the wire (STYLE.md "Errors"). Only code,
// message, retryable, details and reason travel; the cause and the stack stay in the sending process.
// Messages and details are capped (on NATS an 8 KiB message and 16 KiB of details; in a gRPC
// trailer 2 KiB and 4 KiB, under C-core clients' 8 KiB metadata limit) so an error can never make
// a reply or a trailer too large to deliver.

/** gRPC trailing metadata keys carrying a Troupe error next to the gRPC status. */
export const GrpcErrorMetadataKey = {
  /** The `ErrorCode` string. */
  CODE: 'troupe-error-code',
  /** `true` or `false`. */
  RETRYABLE: 'troupe-error-retryable',
  /** Details as an ASCII-only JSON object. */
  DETAILS: 'troupe-error-details',
  /** The `ErrorReason` string, when the error has one. */
  REASON: 'troupe-error-reason',
} as const;

/** One of the {@link GrpcErrorMetadataKey} values. */
export type GrpcErrorMetadataKey = (typeof GrpcErrorMetadataKey)[keyof typeof GrpcErrorMetadataKey];

const TO_GRPC_STATUS: Readonly<Record<ErrorCode, status>> = {
  INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  NOT_FOUND: status.NOT_FOUND,
  ALREADY_EXISTS: status.ALREADY_EXISTS,
  BUSY: status.ABORTED,
  TIMEOUT: status.DEADLINE_EXCEEDED,
  CANCELLED: status.CANCELLED,
  BUDGET_EXHAUSTED: status.RESOURCE_EXHAUSTED,
  UNAVAILABLE: status.UNAVAILABLE,
  PERMISSION_DENIED: status.PERMISSION_DENIED,
  UNAUTHENTICATED: status.UNAUTHENTICATED,
  INTERNAL: status.INTERNAL,
};

/** For statuses without Troupe metadata (proxies, grpc-js' own deadline and connection errors). */
const FROM_GRPC_STATUS: Readonly<Partial<Record<status, ErrorCode>>> = {
  [status.INVALID_ARGUMENT]: ErrorCode.INVALID_ARGUMENT,
  [status.NOT_FOUND]: ErrorCode.NOT_FOUND,
  [status.ALREADY_EXISTS]: ErrorCode.ALREADY_EXISTS,
  [status.ABORTED]: ErrorCode.BUSY,
  [status.DEADLINE_EXCEEDED]: ErrorCode.TIMEOUT,
  [status.CANCELLED]: ErrorCode.CANCELLED,
  [status.RESOURCE_EXHAUSTED]: ErrorCode.BUDGET_EXHAUSTED,
  [status.UNAVAILABLE]: ErrorCode.UNAVAILABLE,
  [status.PERMISSION_DENIED]: ErrorCode.PERMISSION_DENIED,
  [status.UNAUTHENTICATED]: ErrorCode.UNAUTHENTICATED,
};

/** The gRPC status code an {@link ErrorCode} is sent as. */
export function grpcStatusFor(code: ErrorCode): status {
  return TO_GRPC_STATUS[code];
}

function encodeHeaderString(text: string): string {
  // A JSON string of a string always serialises.
  return toAsciiJson(text) as string;
}

/** Details as ASCII JSON, or undefined when absent, unserialisable or too large to send. */
/** Longest string kept inside details that are over their cap (see {@link wireDetails}). */
const SHRUNK_DETAIL_STRING_CHARS = 200;

/**
 * Details as ASCII JSON of at most `maxChars`. Over the cap, long strings inside (an offending
 * value echoed in an issue's rule) are cut first, so `issues`' fields and rules survive; if that
 * is not enough, only `{truncated, sizeChars}` is sent.
 */
function wireDetails(
  details: Record<string, unknown> | undefined,
  maxChars: number,
): string | undefined {
  if (details === undefined) return undefined;
  const json = toAsciiJson(details);
  if (json === undefined) return undefined;
  if (json.length <= maxChars) return json;
  const shrunk = toAsciiJson({
    ...(shrinkStrings(details) as Record<string, unknown>),
    truncated: true,
  });
  if (shrunk !== undefined && shrunk.length <= maxChars) return shrunk;
  return toAsciiJson({ truncated: true, sizeChars: json.length });
}

function shrinkStrings(value: unknown): unknown {
  if (typeof value === 'string') {
    return value.length <= SHRUNK_DETAIL_STRING_CHARS
      ? value
      : `${dropTrailingHighSurrogate(value.slice(0, SHRUNK_DETAIL_STRING_CHARS))}…`;
  }
  if (Array.isArray(value)) return value.map(shrinkStrings);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shrinkStrings(v)]));
  }
  return value;
}

function parseDetails(json: string | undefined): Record<string, unknown> | undefined {
  if (json === undefined || json === '') return undefined;
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function parseRetryable(value: string | undefined): boolean | undefined {
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}

/** The error-carrying fields as received, before parsing. */
interface WireFields {
  retryable: string | undefined;
  details: string | undefined;
  reason: string | undefined;
}

function decodedOptions(fields: WireFields, cause: unknown): TroupeErrorOptions {
  const options: TroupeErrorOptions = { cause };
  const flag = parseRetryable(fields.retryable);
  if (flag !== undefined) options.retryable = flag;
  const parsed = parseDetails(fields.details);
  if (parsed !== undefined) options.details = parsed;
  // An unknown reason (from a newer peer) is dropped: callers only ever test for known ones.
  if (isErrorReason(fields.reason)) options.reason = fields.reason;
  return options;
}

/**
 * Writes `err` (any thrown value, converted with `toTroupeError`) into NATS headers: `Troupe-Error-
 * Code`, `Troupe-Error-Message` (an ASCII JSON string literal, so newlines and Unicode survive a
 * single-line header exactly), `Troupe-Error-Retryable` and, when present, `Troupe-Error-Details`
 * and `Troupe-Error-Reason`. Sets into `into` when given (replacing earlier error headers).
 */
export function encodeErrorHeaders(err: unknown, into?: MsgHdrs): MsgHdrs {
  const e = toTroupeError(err);
  const h = into ?? headers();
  h.set(Header.ERROR_CODE, e.code);
  // ASCII JSON keeps any string exact, lone surrogates included.
  const message = truncateEncoded(e.message, MAX_WIRE_MESSAGE_CHARS, encodeHeaderString);
  h.set(Header.ERROR_MESSAGE, encodeHeaderString(message));
  h.set(Header.ERROR_RETRYABLE, String(e.retryable));
  const details = wireDetails(e.details, MAX_WIRE_DETAILS_CHARS);
  if (details === undefined) h.delete(Header.ERROR_DETAILS);
  else h.set(Header.ERROR_DETAILS, details);
  if (e.reason === undefined) h.delete(Header.ERROR_REASON);
  else h.set(Header.ERROR_REASON, e.reason);
  return h;
}

function headerValue(h: MsgHdrs, name: Header): string | undefined {
  // nats.js answers "" for a missing header.
  return h.has(name) ? h.get(name) : undefined;
}

function decodeHeaderString(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.startsWith('"')) {
    try {
      const text: unknown = JSON.parse(value);
      if (typeof text === 'string') return text;
    } catch {
      // Not ours: fall through and take the value verbatim.
    }
  }
  return value;
}

/**
 * The error carried by NATS headers, or `undefined` when they carry none (no `Troupe-Error-Code`).
 * An unknown code becomes `INTERNAL` (the received code is kept as `details.wireCode`); malformed
 * details are dropped; a missing retryable flag takes the code's default.
 */
export function decodeErrorHeaders(h: MsgHdrs | undefined): TroupeError | undefined {
  if (h === undefined) return undefined;
  const wireCode = headerValue(h, Header.ERROR_CODE);
  if (wireCode === undefined || wireCode === '') return undefined;
  const code = isErrorCode(wireCode) ? wireCode : ErrorCode.INTERNAL;
  const message =
    decodeHeaderString(headerValue(h, Header.ERROR_MESSAGE)) ?? `remote error ${wireCode}`;
  const options = decodedOptions(
    {
      retryable: headerValue(h, Header.ERROR_RETRYABLE),
      details: headerValue(h, Header.ERROR_DETAILS),
      reason: headerValue(h, Header.ERROR_REASON),
    },
    undefined,
  );
  if (code !== wireCode) options.details = { ...options.details, wireCode };
  return new TroupeError(code, message, options);
}

/**
 * What a gRPC server hands to grpc-js for a failed call: an `Error` with the gRPC `code`, `details`
 * (the message) and trailing `metadata`.
 */
export type GrpcServiceError = ServerErrorResponse & {
  /** The gRPC status code. */
  code: status;
  /** The status message: the Troupe error's message. */
  details: string;
  /** Trailing metadata with the {@link GrpcErrorMetadataKey} entries. */
  metadata: Metadata;
};

/**
 * Converts any thrown value (via `toTroupeError`) into a gRPC status for a server handler: pass it
 * to a unary `callback(err)`, or to `call.destroy(err)` / `call.emit('error', err)` in a streaming
 * handler. The status code follows {@link grpcStatusFor}; trailing metadata carries
 * `troupe-error-code`, `troupe-error-retryable`, `troupe-error-details` (JSON) and
 * `troupe-error-reason` (when the error has one). Entries are added
 * to `into` when given. The cause is attached locally (for server logs) but grpc-js never sends it.
 */
export function toGrpcServiceError(err: unknown, into?: Metadata): GrpcServiceError {
  const e = toTroupeError(err);
  // grpc-js sends the status message with encodeURI, which throws on lone surrogates; cap the
  // message by its encoded size.
  const details = truncateEncoded(toWellFormed(e.message), MAX_GRPC_MESSAGE_CHARS, encodeURI);
  const metadata = into ?? new Metadata();
  metadata.set(GrpcErrorMetadataKey.CODE, e.code);
  metadata.set(GrpcErrorMetadataKey.RETRYABLE, String(e.retryable));
  const json = wireDetails(e.details, MAX_GRPC_DETAILS_CHARS);
  if (json === undefined) metadata.remove(GrpcErrorMetadataKey.DETAILS);
  else metadata.set(GrpcErrorMetadataKey.DETAILS, json);
  if (e.reason === undefined) metadata.remove(GrpcErrorMetadataKey.REASON);
  else metadata.set(GrpcErrorMetadataKey.REASON, e.reason);
  const grpcError = new Error(details, { cause: e }) as GrpcServiceError;
  grpcError.name = 'GrpcServiceError';
  grpcError.code = grpcStatusFor(e.code);
  grpcError.details = details;
  grpcError.metadata = metadata;
  return grpcError;
}

function firstString(metadata: unknown, key: string): string | undefined {
  if (typeof metadata !== 'object' || metadata === null) return undefined;
  const get = readProperty(metadata, 'get');
  if (typeof get !== 'function') return undefined;
  try {
    const values: unknown = (get as (k: string) => unknown).call(metadata, key);
    if (!Array.isArray(values)) return undefined;
    const first: unknown = values[0];
    return typeof first === 'string' ? first : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The Troupe error behind a failed gRPC call (a grpc-js `ServiceError`; typed `unknown` so a
 * `catch` variable can be passed directly). Reads the Troupe trailing
 * metadata first; without it (a proxy, or grpc-js' own deadline/connection errors) maps the status:
 * `ABORTED`→`BUSY`, `DEADLINE_EXCEEDED`→`TIMEOUT`, `RESOURCE_EXHAUSTED`→`BUDGET_EXHAUSTED`,
 * `UNAVAILABLE`→`UNAVAILABLE`, same-named codes to themselves, anything else → `INTERNAL`. Values
 * that are not gRPC errors go through `toTroupeError`. The gRPC error is kept as `cause`.
 */
export function fromGrpcError(err: unknown): TroupeError {
  if (err instanceof TroupeError) return err;
  if (typeof err !== 'object' || err === null) return toTroupeError(err);
  const grpcCode = readProperty(err, 'code');
  if (typeof grpcCode !== 'number') return toTroupeError(err);
  const statusDetails = readProperty(err, 'details');
  const statusMessage = readProperty(err, 'message');
  const message =
    typeof statusDetails === 'string' && statusDetails !== ''
      ? statusDetails
      : typeof statusMessage === 'string' && statusMessage !== ''
        ? statusMessage
        : `gRPC status ${status[grpcCode] ?? grpcCode}`;
  const metadata = readProperty(err, 'metadata');
  const wireCode = firstString(metadata, GrpcErrorMetadataKey.CODE);
  if (wireCode !== undefined && wireCode !== '') {
    const code = isErrorCode(wireCode) ? wireCode : ErrorCode.INTERNAL;
    const options = decodedOptions(
      {
        retryable: firstString(metadata, GrpcErrorMetadataKey.RETRYABLE),
        details: firstString(metadata, GrpcErrorMetadataKey.DETAILS),
        reason: firstString(metadata, GrpcErrorMetadataKey.REASON),
      },
      err,
    );
    if (code !== wireCode) options.details = { ...options.details, wireCode };
    return new TroupeError(code, message, options);
  }
  const code = FROM_GRPC_STATUS[grpcCode as status] ?? ErrorCode.INTERNAL;
  return new TroupeError(code, message, { cause: err, details: { grpcStatus: grpcCode } });
}
