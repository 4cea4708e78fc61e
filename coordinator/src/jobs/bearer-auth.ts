import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Metadata } from '@grpc/grpc-js';
import { TroupeError } from '@troupe/proto';
import { type GrpcConfig, MIN_TOKEN_CHARS } from './grpc-config';

/**
 * Checks `authorization: Bearer <token>` metadata against the configured token in constant time
 * (both sides are hashed to equal-length digests first, so neither the content nor the length of
 * the expected token leaks through timing).
 */
export class BearerAuth {
  private readonly expected: Buffer | undefined;

  private constructor(token: string | undefined) {
    this.expected = token === undefined ? undefined : digest(token);
  }

  /**
   * From the `grpc` config: `token`, or the contents of `tokenFile` (read once, trimmed); no
   * checking at all when `allowUnauthenticated` is set and no token is given.
   */
  static fromConfig(config: GrpcConfig): BearerAuth {
    if (config.token !== undefined) return new BearerAuth(config.token);
    if (config.tokenFile !== undefined) {
      let token: string;
      try {
        token = readFileSync(config.tokenFile, 'utf8').trim();
      } catch (err) {
        throw new TroupeError(
          'INVALID_ARGUMENT',
          `config.grpc.tokenFile: cannot read ${config.tokenFile}`,
          { cause: err, details: { field: 'config.grpc.tokenFile' } },
        );
      }
      if (token.length < MIN_TOKEN_CHARS) {
        throw new TroupeError(
          'INVALID_ARGUMENT',
          `config.grpc.tokenFile: the token in ${config.tokenFile} must be at least ${MIN_TOKEN_CHARS} characters`,
          { details: { field: 'config.grpc.tokenFile' } },
        );
      }
      return new BearerAuth(token);
    }
    return new BearerAuth(undefined);
  }

  /** Whether requests are checked at all. */
  get enabled(): boolean {
    return this.expected !== undefined;
  }

  /** Throws `UNAUTHENTICATED` unless the metadata carries the right bearer token. */
  check(metadata: Metadata): void {
    if (!this.expected) return;
    const values = metadata.get('authorization');
    const header = typeof values[0] === 'string' ? values[0] : undefined;
    if (header === undefined) {
      throw new TroupeError('UNAUTHENTICATED', 'missing bearer token (authorization metadata)');
    }
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!match?.[1] || !timingSafeEqual(digest(match[1]), this.expected)) {
      throw new TroupeError('UNAUTHENTICATED', 'invalid bearer token');
    }
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
