import { status } from '@grpc/grpc-js';
import { fromGrpcError, GrpcErrorMetadataKey, TroupeError } from '@troupe/proto';

/**
 * The Troupe error behind a failed call. Like `fromGrpcError`, plus what grpc-js itself reports
 * without Troupe metadata: a request over the server's size limit (`RESOURCE_EXHAUSTED` from the
 * transport, which is not a budget) becomes `INVALID_ARGUMENT`, and an unreachable server names
 * the address.
 */
export function toClientError(err: unknown, address: string): TroupeError {
  const e = fromGrpcError(err);
  const grpcCode = (err as { code?: unknown } | null)?.code;
  const metadata = (err as { metadata?: { get?: (k: string) => unknown[] } } | null)?.metadata;
  const hasTroupeCode = (metadata?.get?.(GrpcErrorMetadataKey.CODE) ?? []).length > 0;
  if (grpcCode === status.RESOURCE_EXHAUSTED && !hasTroupeCode) {
    return new TroupeError(
      'INVALID_ARGUMENT',
      `request refused by the server: ${e.message} (larger than its grpc.maxMessageBytes?)`,
      { cause: err, details: { field: 'request', rule: 'message size limit' } },
    );
  }
  if (e.code === 'UNAVAILABLE' && !hasTroupeCode) {
    return new TroupeError(
      'UNAVAILABLE',
      `cannot reach the Troupe API at ${address}: ${e.message}`,
      {
        cause: err,
      },
    );
  }
  return e;
}
