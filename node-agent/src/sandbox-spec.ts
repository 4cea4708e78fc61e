import path from 'node:path';
import { NamePattern, parseWith } from '@troupe/proto';
import { z } from 'zod';

/** Environment keys that look like credentials; refused unless listed in `allowSecretEnvKeys`. */
const SECRET_LIKE_ENV_KEY =
  /(^|_)(SECRET|SECRETS|TOKEN|TOKENS|PASSWORD|PASSWD|PASSPHRASE|PWD_HASH|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH|COOKIE|SESSION)(_|$)/i;

/** Paths a sandbox mount may not use: they belong to the kernel, the runtime or /tmp's tmpfs. */
const RESERVED_MOUNT_PATHS = ['/', '/proc', '/sys', '/dev', '/tmp', '/etc', '/bin', '/usr', '/lib'];

/** Whether an environment key looks like it carries a credential (`OPENAI_API_KEY`, `GH_TOKEN`). */
export function isSecretLikeEnvKey(key: string): boolean {
  return SECRET_LIKE_ENV_KEY.test(key);
}

const mountPath = z
  .string()
  .regex(/^\/[A-Za-z0-9._/-]*$/, 'must be an absolute path of letters, digits, ".", "_", "-", "/"')
  .refine((p) => path.posix.normalize(p) === p && !p.endsWith('/'), {
    message: 'must be normalised (no "..", "//" or trailing "/")',
  })
  .refine(
    (p) => !RESERVED_MOUNT_PATHS.some((r) => p === r || (r !== '/' && p.startsWith(`${r}/`))),
    { message: `must not be or lie under ${RESERVED_MOUNT_PATHS.join(', ')}` },
  );

const envKey = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must match [A-Za-z_][A-Za-z0-9_]{0,127}')
  .refine((k) => !k.startsWith('TROUPE_'), { message: 'the TROUPE_ prefix is reserved' });

const relativeFilePath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => !p.startsWith('/') && !p.split('/').includes('..') && !p.includes('\0'), {
    message: 'must be a relative path without ".." segments',
  });

/** Owner labels of a sandbox, as validated by {@link SandboxSpecSchema}. */
export const SandboxLabelsSchema = z
  .object({
    cluster: z.string().regex(NamePattern.CLUSTER, 'must match [a-z0-9-]{1,32}'),
    host: z.string().regex(NamePattern.HOST_ID, 'must match [A-Za-z0-9_-]{1,64}'),
    actor: z
      .string()
      .regex(/^[A-Za-z0-9_./:-]{1,200}$/, 'must be 1 to 200 of [A-Za-z0-9_./:-] (`kind/id`)'),
    job: z
      .string()
      .regex(/^[A-Za-z0-9_-]{0,128}$/, 'must match [A-Za-z0-9_-]{0,128}')
      .default(''),
  })
  .strict();

/**
 * A sandbox request. Defaults are the Troupe sandbox policy (ARCHITECTURE.md §6): no network, uid
 * 1000, read-only root with a writable workspace volume and a /tmp tmpfs, memory/CPU/pids limits,
 * no capabilities, no host environment. Every field that loosens the policy is recorded in
 * {@link SandboxSpec.policyExceptions}.
 */
export const SandboxSpecSchema = z
  .object({
    /** Image reference or id; Troupe images are `troupe-<name>:latest` (see ImageManager). */
    image: z
      .string()
      .min(1)
      .max(256)
      .regex(NamePattern.IMAGE_REF, 'must be a Docker image reference or id'),
    /** The writable workspace: a per-sandbox volume mounted here. @default '/workspace' */
    workdir: mountPath.default('/workspace'),
    /** Memory limit (no swap beyond it). @default 512 */
    memoryMb: z.int().min(16).max(262_144).default(512),
    /** CPU limit in cores (fractions allowed). @default 1 */
    cpus: z.number().min(0.01).max(256).default(1),
    /** Maximum number of processes and threads. @default 256 */
    pidsLimit: z.int().min(8).max(65_536).default(256),
    /** Size of the /tmp tmpfs (counts against `memoryMb`). @default 256 */
    tmpfsMb: z.int().min(1).max(65_536).default(256),
    /** Environment of every process; the host's environment is never copied. @default {} */
    env: z.record(z.string(), z.string().max(65_536)).default({}),
    /** Secret-looking env keys allowed anyway; each one is a policy exception. @default [] */
    allowSecretEnvKeys: z.array(envKey).max(64).default([]),
    /** Files written into the workspace once the sandbox is ready (relative paths). @default {} */
    files: z.record(z.string(), z.union([z.string(), z.instanceof(Uint8Array)])).default({}),
    /** `none` (only loopback) or `bridge` (a policy exception). @default 'none' */
    network: z.enum(['none', 'bridge']).default('none'),
    /** `uid` or `uid:gid`, numeric; uid 0 is a policy exception. @default '1000:1000' */
    user: z
      .string()
      .regex(/^\d{1,10}(:\d{1,10})?$/, 'must be numeric `uid` or `uid:gid`')
      .default('1000:1000'),
    /** Mount the image read-only; `false` is a policy exception. @default true */
    readOnlyRoot: z.boolean().default(true),
    /** Extra per-sandbox (empty) named volumes, by mount path. @default [] */
    volumes: z.array(mountPath).max(8).default([]),
    /** Extra tmpfs mounts: mount path → size in MB (counts against `memoryMb`). @default {} */
    tmpfs: z.record(z.string(), z.int().min(1).max(65_536)).default({}),
    /** Owner labels; the reaper decides by them whether the sandbox is orphaned. */
    labels: SandboxLabelsSchema,
  })
  .strict()
  .superRefine((spec, ctx) => {
    // Record keys are checked here so the message names the key and the rule it broke.
    const checkKeys = (field: string, keys: string[], schema: z.ZodType): void => {
      for (const key of keys) {
        const r = schema.safeParse(key);
        if (!r.success) {
          for (const issue of r.error.issues) {
            ctx.addIssue({ code: 'custom', path: [field, key], message: issue.message });
          }
        }
      }
    };
    checkKeys('env', Object.keys(spec.env), envKey);
    checkKeys('files', Object.keys(spec.files), relativeFilePath);
    checkKeys('tmpfs', Object.keys(spec.tmpfs), mountPath);
    const mounts = [spec.workdir, ...spec.volumes, ...Object.keys(spec.tmpfs)];
    const seen = new Set<string>();
    for (const m of mounts) {
      if (seen.has(m)) {
        ctx.addIssue({
          code: 'custom',
          path: ['volumes'],
          message: `mount path ${m} is used twice (workdir, volumes and tmpfs must differ)`,
        });
      }
      seen.add(m);
    }
    for (const a of mounts) {
      for (const b of mounts) {
        if (a !== b && b.startsWith(`${a}/`)) {
          ctx.addIssue({
            code: 'custom',
            path: ['volumes'],
            message: `mount path ${b} lies inside mount ${a}; mounts must not nest`,
          });
        }
      }
    }
    const allowed = new Set(spec.allowSecretEnvKeys);
    for (const key of Object.keys(spec.env)) {
      if (isSecretLikeEnvKey(key) && !allowed.has(key)) {
        ctx.addIssue({
          code: 'custom',
          path: ['env', key],
          message:
            'looks like a secret: sandboxes get no secrets by default (list the key in allowSecretEnvKeys to allow it, recorded as a policy exception)',
        });
      }
    }
  });

/** What a caller passes to create a sandbox: {@link SandboxSpecSchema}'s input. */
export type SandboxSpecOptions = z.input<typeof SandboxSpecSchema>;

/** A validated, defaulted sandbox request plus its recorded policy exceptions. */
export type SandboxSpec = z.output<typeof SandboxSpecSchema> & {
  /** Every loosening of the default policy, e.g. `network:bridge`, `user:root`, `env:GH_TOKEN`. */
  readonly policyExceptions: readonly string[];
};

/** The uid and gid of a spec's `user` (`uid` alone means gid = uid). */
export function userIds(user: string): { uid: number; gid: number } {
  const [uid, gid] = user.split(':');
  const u = Number(uid);
  return { uid: u, gid: gid === undefined ? u : Number(gid) };
}

/** The policy exceptions a validated spec implies, in a stable order. */
export function policyExceptionsOf(spec: z.output<typeof SandboxSpecSchema>): string[] {
  const out: string[] = [];
  if (spec.network !== 'none') out.push(`network:${spec.network}`);
  if (userIds(spec.user).uid === 0) out.push('user:root');
  if (!spec.readOnlyRoot) out.push('rootfs:writable');
  // Allowing a secret-looking key is the exception, whether the spec's env or an exec uses it.
  for (const key of [...new Set(spec.allowSecretEnvKeys)].sort()) out.push(`env:${key}`);
  return out;
}

/**
 * Validates and defaults a sandbox request.
 *
 * @throws TroupeError `INVALID_ARGUMENT` naming every offending field (`spec.memoryMb: ...`)
 */
export function parseSandboxSpec(options: SandboxSpecOptions | SandboxSpec): SandboxSpec {
  // A spec that was parsed before carries policyExceptions, which the strict schema refuses.
  const { policyExceptions: _ignored, ...input } = options as SandboxSpecOptions & {
    policyExceptions?: unknown;
  };
  const spec = parseWith(SandboxSpecSchema, input, { prefix: 'spec' });
  return { ...spec, policyExceptions: policyExceptionsOf(spec) };
}
