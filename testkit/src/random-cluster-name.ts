import { randomBytes } from 'node:crypto';

/**
 * A random cluster name, `t-` followed by 8 lowercase hex digits (matches `[a-z0-9-]+`), so tests
 * that share a NATS server or Docker engine isolate their subjects, buckets and containers.
 */
export function randomClusterName(): string {
  return `t-${randomBytes(4).toString('hex')}`;
}
