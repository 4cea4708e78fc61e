import { Metadata, status } from '@grpc/grpc-js';
import { headers } from '@nats-io/transport-node';
import {
  decodeErrorHeaders,
  encodeErrorHeaders,
  ErrorCode,
  ErrorReason,
  fromGrpcError,
  hasReason,
  GrpcErrorMetadataKey,
  grpcStatusFor,
  Header,
  toGrpcServiceError,
  TroupeError,
} from '@troupe/proto';

const ALL_CODES = Object.values(ErrorCode);
const TRICKY_MESSAGE =
  'line one\nline two\r\n\ttabbed "quoted" \\back\\ 100% ünïcødé 日本語 🎭 \u0000 end ';

/** Simulates what a receiver sees: only the header lines survive, re-parsed. */
function overTheWire(h: ReturnType<typeof headers>): ReturnType<typeof headers> {
  const copy = headers();
  for (const [key, values] of h) for (const v of values) copy.append(key, v);
  return copy;
}

describe('Header', () => {
  it('names the Troupe headers', () => {
    expect(Header.ERROR_CODE).toBe('Troupe-Error-Code');
    expect(Header.ERROR_MESSAGE).toBe('Troupe-Error-Message');
    expect(Header.ERROR_RETRYABLE).toBe('Troupe-Error-Retryable');
    expect(Header.ERROR_DETAILS).toBe('Troupe-Error-Details');
    expect(Header.ERROR_REASON).toBe('Troupe-Error-Reason');
    expect(Header.MSG_TYPE).toBe('Troupe-Msg-Type');
    expect(Header.SENDER).toBe('Troupe-Sender');
    expect(Header.DEADLINE).toBe('Troupe-Deadline');
    expect(Header.EPOCH).toBe('Troupe-Epoch');
    expect(Header.ATTEMPT).toBe('Troupe-Attempt');
    expect(Header.JOB).toBe('Troupe-Job');
    expect(Header.MSG_ID).toBe('Nats-Msg-Id');
    for (const name of Object.values(Header))
      expect(name).toMatch(/^[A-Z][A-Za-z]*(-[A-Z][A-Za-z]*)+$/);
  });
});

describe('NATS headers', () => {
  it.each(ALL_CODES)('round-trips %s with its default retryable flag', (code) => {
    const sent = new TroupeError(code, `failed with ${code}`);
    const got = decodeErrorHeaders(overTheWire(encodeErrorHeaders(sent)))!;
    expect(got).toBeInstanceOf(TroupeError);
    expect(got.code).toBe(code);
    expect(got.message).toBe(`failed with ${code}`);
    expect(got.retryable).toBe(sent.retryable);
    expect(got.details).toBeUndefined();
  });

  it.each(ALL_CODES)('round-trips %s with an overridden retryable flag and details', (code) => {
    const sent = new TroupeError(code, 'x', {
      retryable: !new TroupeError(code, 'x').retryable,
      details: { field: 'spec.name', n: 3, nested: { list: [1, 'two', null] }, emoji: '🎭' },
    });
    const got = decodeErrorHeaders(overTheWire(encodeErrorHeaders(sent)))!;
    expect(got.retryable).toBe(sent.retryable);
    expect(got.details).toEqual(sent.details);
  });

  it('keeps multi-line and Unicode messages exact while every header value is one ASCII line', () => {
    const h = encodeErrorHeaders(
      new TroupeError('INTERNAL', TRICKY_MESSAGE, { details: { m: TRICKY_MESSAGE } }),
    );
    for (const [, values] of h) {
      for (const v of values) expect(v).toMatch(/^[ -~]*$/);
    }
    const got = decodeErrorHeaders(overTheWire(h))!;
    expect(got.message).toBe(TRICKY_MESSAGE);
    expect(got.details).toEqual({ m: TRICKY_MESSAGE });
  });

  it('keeps leading and trailing spaces and lone surrogates (nats.js trims raw values)', () => {
    const message = '  padded  \ud800';
    const got = decodeErrorHeaders(
      overTheWire(encodeErrorHeaders(new TroupeError('BUSY', message))),
    )!;
    expect(got.message).toBe(message);
  });

  it('does not put the cause or the stack on the wire', () => {
    const h = encodeErrorHeaders(
      new TroupeError('UNAVAILABLE', 'host down', { cause: new Error('password=hunter2') }),
    );
    const wire = [...h].map(([k, values]) => `${k}: ${values.join(', ')}`).join('\n');
    expect(wire).not.toContain('hunter2');
    expect(wire).not.toContain('at ');
    expect(decodeErrorHeaders(h)!.cause).toBeUndefined();
  });

  it('turns unknown thrown values into INTERNAL', () => {
    for (const [thrown, message] of [
      [new Error('plain'), 'plain'],
      ['a string', 'a string'],
      [null, 'unknown error (null)'],
    ] as const) {
      const got = decodeErrorHeaders(encodeErrorHeaders(thrown))!;
      expect(got.code).toBe('INTERNAL');
      expect(got.retryable).toBe(false);
      expect(got.message).toBe(message);
    }
  });

  it.each(Object.values(ErrorReason))('carries the %s reason in its header', (reason) => {
    const sent = new TroupeError('UNAVAILABLE', 'x', { reason, cause: new Error('inner') });
    const h = encodeErrorHeaders(new Error('outer', { cause: sent }));
    expect(h.get(Header.ERROR_REASON)).toBe(reason);
    const got = decodeErrorHeaders(overTheWire(h))!;
    expect(got.reason).toBe(reason);
    expect(hasReason(got, reason)).toBe(true);
  });

  it('sends no reason header for an error without one, and replaces an earlier one', () => {
    const h = encodeErrorHeaders(new TroupeError('UNAVAILABLE', 'x', { reason: 'FENCED' }));
    encodeErrorHeaders(new TroupeError('UNAVAILABLE', 'y'), h);
    expect(h.has(Header.ERROR_REASON)).toBe(false);
    expect(decodeErrorHeaders(overTheWire(h))!.reason).toBeUndefined();
  });

  it('decodes headers of a peer that predates reasons, and drops an unknown reason', () => {
    const old = headers();
    old.set(Header.ERROR_CODE, 'UNAVAILABLE');
    old.set(Header.ERROR_DETAILS, '{"fenced":true}');
    const got = decodeErrorHeaders(old)!;
    expect(got.code).toBe('UNAVAILABLE');
    expect(got.reason).toBeUndefined();
    expect(hasReason(got, 'FENCED')).toBe(true);
    const newer = headers();
    newer.set(Header.ERROR_CODE, 'UNAVAILABLE');
    newer.set(Header.ERROR_REASON, 'SOMETHING_NEW');
    const unknown = decodeErrorHeaders(newer)!;
    expect(unknown.reason).toBeUndefined();
    expect(unknown.code).toBe('UNAVAILABLE');
  });

  it('maps abort and timeout reasons', () => {
    const controller = new AbortController();
    controller.abort();
    expect(decodeErrorHeaders(encodeErrorHeaders(controller.signal.reason))!.code).toBe(
      'CANCELLED',
    );
    const timeout = new DOMException('timed out', 'TimeoutError');
    expect(decodeErrorHeaders(encodeErrorHeaders(timeout))!.code).toBe('TIMEOUT');
  });

  it('writes into given headers, keeping the others and replacing an earlier error', () => {
    const h = headers();
    h.set(Header.MSG_TYPE, 'add');
    encodeErrorHeaders(new TroupeError('BUSY', 'first', { details: { a: 1 } }), h);
    const same = encodeErrorHeaders(new TroupeError('NOT_FOUND', 'second'), h);
    expect(same).toBe(h);
    expect(h.get(Header.MSG_TYPE)).toBe('add');
    expect(h.values(Header.ERROR_CODE)).toEqual(['NOT_FOUND']);
    const got = decodeErrorHeaders(h)!;
    expect(got.message).toBe('second');
    expect(got.details).toBeUndefined();
  });

  it('returns undefined when there is no error', () => {
    expect(decodeErrorHeaders(undefined)).toBeUndefined();
    const h = headers();
    h.set(Header.MSG_TYPE, 'reply');
    expect(decodeErrorHeaders(h)).toBeUndefined();
  });

  it('tolerates foreign or damaged headers', () => {
    const h = headers();
    h.set(Header.ERROR_CODE, 'TEAPOT');
    h.set(Header.ERROR_MESSAGE, 'plain text, not JSON');
    h.set(Header.ERROR_RETRYABLE, 'maybe');
    h.set(Header.ERROR_DETAILS, '{not json');
    const got = decodeErrorHeaders(h)!;
    expect(got.code).toBe('INTERNAL');
    expect(got.message).toBe('plain text, not JSON');
    expect(got.retryable).toBe(false);
    expect(got.details).toEqual({ wireCode: 'TEAPOT' });

    const arrayDetails = headers();
    arrayDetails.set(Header.ERROR_CODE, 'BUSY');
    arrayDetails.set(Header.ERROR_DETAILS, '[1,2]');
    const busy = decodeErrorHeaders(arrayDetails)!;
    expect(busy.details).toBeUndefined();
    expect(busy.retryable).toBe(true);
    expect(busy.message).toBe('remote error BUSY');

    const badQuote = headers();
    badQuote.set(Header.ERROR_CODE, 'BUSY');
    badQuote.set(Header.ERROR_MESSAGE, '"unterminated');
    expect(decodeErrorHeaders(badQuote)!.message).toBe('"unterminated');
  });

  it('caps huge messages and details instead of failing the reply', () => {
    const huge = new TroupeError('INVALID_ARGUMENT', '日'.repeat(100_000), {
      details: { blob: 'x'.repeat(100_000) },
    });
    const h = encodeErrorHeaders(huge);
    expect(h.get(Header.ERROR_MESSAGE).length).toBeLessThanOrEqual(8192);
    const got = decodeErrorHeaders(h)!;
    expect(got.message.endsWith('…')).toBe(true);
    expect(got.message.startsWith('日日日')).toBe(true);
    // Long strings are cut first, so the keys a client acts on survive.
    expect(got.details).toEqual({ blob: `${'x'.repeat(200)}…`, truncated: true });
  });

  it('sends only the size when cutting long strings is not enough', () => {
    const many = new TroupeError('INVALID_ARGUMENT', 'm', {
      details: { issues: Array.from({ length: 5_000 }, (_, i) => ({ field: `f${i}`, rule: 'r' })) },
    });
    const got = decodeErrorHeaders(encodeErrorHeaders(many))!;
    expect(got.details).toEqual({ truncated: true, sizeChars: expect.any(Number) as number });
    expect((got.details as { sizeChars: number }).sizeChars).toBeGreaterThan(16_384);
  });

  it('drops details that cannot be serialised', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const got = decodeErrorHeaders(
      encodeErrorHeaders(new TroupeError('BUSY', 'x', { details: cyclic })),
    )!;
    expect(got.details).toBeUndefined();
    const big = decodeErrorHeaders(
      encodeErrorHeaders(new TroupeError('BUSY', 'x', { details: { n: 2n ** 70n } })),
    )!;
    expect(big.details).toEqual({ n: '1180591620717411303424' });
  });
});

describe('gRPC status', () => {
  const expectedStatus: Record<ErrorCode, status> = {
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

  /** What a grpc-js client builds from the trailers: a ServiceError. */
  function asClientError(e: ReturnType<typeof toGrpcServiceError>): Error {
    return Object.assign(new Error(`${e.code} ${status[e.code]}: ${e.details}`), {
      code: e.code,
      details: e.details,
      metadata: e.metadata.clone(),
    });
  }

  it.each(ALL_CODES)('maps %s to its status and back through the metadata', (code) => {
    const sent = new TroupeError(code, `failed with ${code}`, { details: { k: 'v' } });
    const e = toGrpcServiceError(sent);
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe(expectedStatus[code]);
    expect(grpcStatusFor(code)).toBe(expectedStatus[code]);
    expect(e.details).toBe(`failed with ${code}`);
    expect(e.metadata.get(GrpcErrorMetadataKey.CODE)).toEqual([code]);
    expect(e.metadata.get(GrpcErrorMetadataKey.RETRYABLE)).toEqual([String(sent.retryable)]);
    const got = fromGrpcError(asClientError(e));
    expect(got.code).toBe(code);
    expect(got.message).toBe(`failed with ${code}`);
    expect(got.retryable).toBe(sent.retryable);
    expect(got.details).toEqual({ k: 'v' });
  });

  it.each(ALL_CODES)('keeps an overridden retryable flag of %s', (code) => {
    const flipped = !new TroupeError(code, 'x').retryable;
    const got = fromGrpcError(
      asClientError(toGrpcServiceError(new TroupeError(code, 'x', { retryable: flipped }))),
    );
    expect(got.retryable).toBe(flipped);
  });

  it('only puts ASCII metadata values (grpc-js rejects others) and no cause', () => {
    const e = toGrpcServiceError(
      new TroupeError('INTERNAL', TRICKY_MESSAGE, {
        details: { m: TRICKY_MESSAGE },
        reason: 'FENCED',
        cause: new Error('password=hunter2'),
      }),
    );
    const map = e.metadata.getMap();
    expect(Object.keys(map).sort()).toEqual(Object.values(GrpcErrorMetadataKey).sort());
    for (const value of Object.values(map)) expect(value).toMatch(/^[ -~]*$/);
    expect(JSON.stringify(map)).not.toContain('hunter2');
    expect(e.details).toBe(TRICKY_MESSAGE);
    expect(fromGrpcError(asClientError(e)).details).toEqual({ m: TRICKY_MESSAGE });
  });

  it('turns unknown thrown values into INTERNAL', () => {
    for (const thrown of [new Error('plain'), 'a string', null]) {
      const e = toGrpcServiceError(thrown);
      expect(e.code).toBe(status.INTERNAL);
      expect(fromGrpcError(asClientError(e)).code).toBe('INTERNAL');
    }
  });

  it('adds to given metadata', () => {
    const md = new Metadata();
    md.set('x-request-id', 'r1');
    const e = toGrpcServiceError(new TroupeError('BUSY', 'x'), md);
    expect(e.metadata).toBe(md);
    expect(md.get('x-request-id')).toEqual(['r1']);
    expect(md.get(GrpcErrorMetadataKey.CODE)).toEqual(['BUSY']);
  });

  it('maps bare statuses (no Troupe metadata) back to codes', () => {
    const cases: [status, ErrorCode][] = [
      [status.ABORTED, 'BUSY'],
      [status.DEADLINE_EXCEEDED, 'TIMEOUT'],
      [status.RESOURCE_EXHAUSTED, 'BUDGET_EXHAUSTED'],
      [status.UNAVAILABLE, 'UNAVAILABLE'],
      [status.CANCELLED, 'CANCELLED'],
      [status.INVALID_ARGUMENT, 'INVALID_ARGUMENT'],
      [status.NOT_FOUND, 'NOT_FOUND'],
      [status.ALREADY_EXISTS, 'ALREADY_EXISTS'],
      [status.PERMISSION_DENIED, 'PERMISSION_DENIED'],
      [status.UNAUTHENTICATED, 'UNAUTHENTICATED'],
      [status.UNKNOWN, 'INTERNAL'],
      [status.INTERNAL, 'INTERNAL'],
      [status.UNIMPLEMENTED, 'INTERNAL'],
      [status.FAILED_PRECONDITION, 'INTERNAL'],
      [status.DATA_LOSS, 'INTERNAL'],
    ];
    for (const [grpcCode, code] of cases) {
      const err = Object.assign(new Error('x'), {
        code: grpcCode,
        details: 'upstream said no',
        metadata: new Metadata(),
      });
      const got = fromGrpcError(err);
      expect([grpcCode, got.code]).toEqual([grpcCode, code]);
      expect(got.message).toBe('upstream said no');
      expect(got.cause).toBe(err);
    }
    const noMetadata = fromGrpcError({ code: status.DEADLINE_EXCEEDED, details: '' });
    expect(noMetadata.code).toBe('TIMEOUT');
    expect(noMetadata.retryable).toBe(true);
    expect(noMetadata.message).toBe('gRPC status DEADLINE_EXCEEDED');
  });

  it.each(Object.values(ErrorReason))('carries the %s reason in trailing metadata', (reason) => {
    const e = toGrpcServiceError(new TroupeError('UNAVAILABLE', 'x', { reason }));
    expect(e.metadata.get(GrpcErrorMetadataKey.REASON)).toEqual([reason]);
    expect(fromGrpcError(asClientError(e)).reason).toBe(reason);
    const none = toGrpcServiceError(new TroupeError('UNAVAILABLE', 'x'));
    expect(none.metadata.get(GrpcErrorMetadataKey.REASON)).toEqual([]);
    expect(fromGrpcError(asClientError(none)).reason).toBeUndefined();
  });

  it('tolerates an unknown code and bad details in the metadata', () => {
    const md = new Metadata();
    md.set(GrpcErrorMetadataKey.CODE, 'TEAPOT');
    md.set(GrpcErrorMetadataKey.DETAILS, 'nope{');
    const got = fromGrpcError({ code: status.ABORTED, details: 'd', metadata: md });
    expect(got.code).toBe('INTERNAL');
    expect(got.details).toEqual({ wireCode: 'TEAPOT' });
  });

  it('passes non-gRPC values through toTroupeError', () => {
    const troupe = new TroupeError('BUSY', 'x');
    expect(fromGrpcError(troupe)).toBe(troupe);
    expect(fromGrpcError(new Error('boom')).code).toBe('INTERNAL');
    expect(fromGrpcError(null).code).toBe('INTERNAL');
    expect(fromGrpcError('str').message).toBe('str');
  });

  it('caps the status message by its URI-encoded size', () => {
    const e = toGrpcServiceError(new TroupeError('INVALID_ARGUMENT', '日'.repeat(50_000)));
    expect(encodeURI(e.details).length).toBeLessThanOrEqual(2048);
    expect(e.details.endsWith('…')).toBe(true);
    expect(() =>
      encodeURI(toGrpcServiceError(new TroupeError('BUSY', 'a\ud800b')).details),
    ).not.toThrow();
  });
});
