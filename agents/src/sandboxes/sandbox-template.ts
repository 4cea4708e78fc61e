import { NamePattern } from '@troupe/proto';
import { z } from 'zod';

/** The name of the sandbox a sandbox tool acts on when its call names none. */
export const MAIN_SANDBOX = 'main';

/** A sandbox name, as templates, runs and tools write it: `[a-z][a-z0-9-]{0,31}`. */
export const SANDBOX_NAME_PATTERN = /^[a-z][a-z0-9-]{0,31}$/;

/** A sandbox name ({@link SANDBOX_NAME_PATTERN}). */
export const SandboxNameSchema = z
  .string()
  .regex(SANDBOX_NAME_PATTERN, 'must match [a-z][a-z0-9-]{0,31}');

/** A sandbox actor id, `[A-Za-z0-9_-]{1,128}`. */
export const SandboxIdSchema = z
  .string()
  .regex(NamePattern.ACTOR_ID, 'must match [A-Za-z0-9_-]{1,128}');

/**
 * A sandbox a template declares: the session creates it on first use through the node agent's
 * `sandbox` actor and destroys it when the run ends. Only the image and the resource limits can
 * be chosen, within the node agent's bounds; the security policy (no network, uid 1000, read-only
 * root, no capabilities, no secrets) is the node agent's default and cannot be loosened here.
 */
export const TemplateSandboxSchema = z.strictObject({
  /** Image reference; Troupe images are `troupe-<name>` (built offline from deploy/images). */
  image: z
    .string()
    .min(1)
    .max(256)
    .regex(NamePattern.IMAGE_REF, 'must be a Docker image reference or id'),
  /** What the sandbox is for, told to the model with its name and image. @default none */
  description: z.string().min(1).max(500).optional(),
  /** CPU limit in cores. @default the node agent's (1) */
  cpus: z.number().min(0.01).max(256).optional(),
  /** Memory limit in MB. @default the node agent's (512) */
  memoryMb: z.int().min(16).max(262_144).optional(),
  /** Processes and threads. @default the node agent's (256) */
  pidsLimit: z.int().min(8).max(65_536).optional(),
  /** Size of the /tmp tmpfs in MB (counts against `memoryMb`). @default the node agent's (256) */
  tmpfsMb: z.int().min(1).max(65_536).optional(),
});
/** A declared sandbox, validated. */
export type TemplateSandbox = z.output<typeof TemplateSandboxSchema>;

/**
 * A record keyed by sandbox name, at most 8 entries; a bad key is reported at its path with the
 * rule it breaks (zod's record keys only say "Invalid key").
 */
function byName<V extends z.ZodType>(value: V) {
  return z.record(z.string(), value).superRefine((r, ctx) => {
    const names = Object.keys(r);
    for (const name of names) {
      if (!SANDBOX_NAME_PATTERN.test(name)) {
        ctx.addIssue({ code: 'custom', path: [name], message: 'must match [a-z][a-z0-9-]{0,31}' });
      }
    }
    if (names.length > 8)
      ctx.addIssue({ code: 'custom', message: 'must name at most 8 sandboxes' });
  });
}

/** A template's sandboxes by name (at most 8). */
export const TemplateSandboxesSchema = byName(TemplateSandboxSchema);

/**
 * An existing sandbox given to a run by name: its actor id, or the id with what the model is
 * told about it (a parent agent passes its sandboxes' images this way).
 */
export const SandboxGrantSchema = z.union([
  SandboxIdSchema,
  z.strictObject({
    id: SandboxIdSchema,
    image: z.string().min(1).max(256).optional(),
    description: z.string().min(1).max(500).optional(),
  }),
]);
/** A grant as a caller writes it. */
export type SandboxGrant = z.input<typeof SandboxGrantSchema>;

/** Existing sandboxes given to a run, by name (at most 8). */
export const RunSandboxesSchema = byName(SandboxGrantSchema);

/** A sandbox a session holds (persisted in its state). */
export const HeldSandboxSchema = z.object({
  /** The sandbox actor's id. */
  id: z.string(),
  /** Its image, when known (declared, or told by whoever gave it). */
  image: z.string().optional(),
  description: z.string().optional(),
  /**
   * Declared by this session's template: the session creates it on first use and destroys it
   * when the run ends. Given sandboxes (by the caller or a parent) belong to whoever gave them.
   */
  owned: z.boolean().optional(),
  /**
   * The creation of an owned sandbox was started (committed before its `create` is sent): the
   * run's end destroys it, whichever turn ends the run.
   */
  created: z.boolean().optional(),
  /** An owned sandbox's `create` answered: it exists. */
  ready: z.boolean().optional(),
});
/** A sandbox a session holds. */
export type HeldSandbox = z.infer<typeof HeldSandboxSchema>;

/** The `sandbox` argument of the sandbox tools: a held sandbox's name. @default 'main' */
export const SandboxArgSchema = SandboxNameSchema.default(MAIN_SANDBOX).describe(
  'which of your sandboxes to act on (default main)',
);
