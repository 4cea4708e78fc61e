import { z } from 'zod';

/** Default port of the job API. */
export const DEFAULT_GRPC_PORT = 50051;
/** Default largest request the job API accepts (4 MiB). */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** Shortest bearer token accepted. */
export const MIN_TOKEN_CHARS = 16;

/** The `grpc` section of the coordinator config: where and how the job API is served. */
export const GrpcConfigSchema = z
  .object({
    /** TCP port; 0 picks a free one. @default 50051 */
    port: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(0, { error: 'must be >= 0' })
      .max(65_535, { error: 'must be <= 65535' })
      .default(DEFAULT_GRPC_PORT),
    /** Interface to bind. @default 127.0.0.1 */
    host: z.string({ error: 'must be a string' }).min(1).default('127.0.0.1'),
    /** The bearer token clients must send (`authorization: Bearer <token>`). */
    token: z
      .string({ error: 'must be a string' })
      .min(MIN_TOKEN_CHARS, { error: `must be at least ${MIN_TOKEN_CHARS} characters` })
      .optional(),
    /** A file holding the bearer token (surrounding whitespace ignored). */
    tokenFile: z.string({ error: 'must be a string' }).min(1).optional(),
    /** Serve without authentication (development only; refused unless set explicitly). @default false */
    allowUnauthenticated: z.boolean({ error: 'must be a boolean' }).default(false),
    /** TLS; plaintext when absent. */
    tls: z
      .object({
        /** PEM certificate chain of the server. */
        certFile: z.string().min(1),
        /** PEM private key of the server. */
        keyFile: z.string().min(1),
        /** PEM CA bundle: when set, clients must present a certificate it signed (mutual TLS). */
        clientCaFile: z.string().min(1).optional(),
      })
      .strict()
      .optional(),
    /** Largest request accepted; larger ones are refused with INVALID_ARGUMENT. @default 4194304 */
    maxMessageBytes: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(1_024, { error: 'must be >= 1024' })
      .max(256 * 1024 * 1024, { error: 'must be <= 268435456' })
      .default(DEFAULT_MAX_MESSAGE_BYTES),
  })
  .strict()
  .superRefine((g, ctx) => {
    if (g.token !== undefined && g.tokenFile !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['token'],
        message: 'give token or tokenFile, not both',
      });
    }
    if (g.token === undefined && g.tokenFile === undefined && !g.allowUnauthenticated) {
      ctx.addIssue({
        code: 'custom',
        path: ['token'],
        message: 'give token or tokenFile (or set allowUnauthenticated: true for development)',
      });
    }
  });

/** What a caller passes as the `grpc` section. */
export type GrpcOptions = z.input<typeof GrpcConfigSchema>;
/** The validated `grpc` section. */
export type GrpcConfig = z.output<typeof GrpcConfigSchema>;
