import { invalidArgument } from '@troupe/proto';
import { z } from 'zod';
import { isSecretLikeEnvKey, type SandboxSpec } from '../sandbox-spec';

const envRecord = z.record(
  z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must match [A-Za-z_][A-Za-z0-9_]{0,127}')
    .refine((k) => !k.startsWith('TROUPE_'), { message: 'the TROUPE_ prefix is reserved' }),
  z.string().max(65_536),
);

const cwd = z
  .string()
  .regex(/^\//, 'must be an absolute path')
  .refine((p) => !p.includes('\0'), { message: 'must not contain NUL' });

/** Validates {@link ExecOptions} (all but `signal`). */
export const ExecOptionsSchema = z
  .object({
    timeoutMs: z
      .int()
      .min(1)
      .max(7 * 24 * 3_600_000)
      .optional(),
    cwd: cwd.optional(),
    env: envRecord.optional(),
    stdin: z.union([z.string(), z.instanceof(Uint8Array)]).optional(),
    maxOutputBytes: z
      .int()
      .min(0)
      .max(256 * 1024 * 1024)
      .optional(),
  })
  .strict();

/** Validates {@link BackgroundExecOptions} (all but `signal`). */
export const BackgroundExecOptionsSchema = ExecOptionsSchema.omit({ stdin: true }).extend({
  interactive: z.boolean().optional(),
});

/**
 * `KEY=value` entries of an exec's extra environment, refusing secret-looking keys the spec did
 * not allow (the same rule as the spec's own `env`).
 */
export function envEntries(env: Record<string, string>, spec: SandboxSpec): string[] {
  const allowed = new Set(spec.allowSecretEnvKeys);
  return Object.entries(env).map(([k, v]) => {
    if (isSecretLikeEnvKey(k) && !allowed.has(k)) {
      throw invalidArgument(
        `env.${k}`,
        'looks like a secret: list the key in the spec’s allowSecretEnvKeys to pass it (recorded as a policy exception)',
      );
    }
    return `${k}=${v}`;
  });
}
