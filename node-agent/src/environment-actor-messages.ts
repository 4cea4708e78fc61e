import { z } from 'zod';
import { CommandSchema, JobIdSchema, WireFileSchema } from './sandbox-actor-messages';
import type { WindowInfo, WindowListing } from './environment';

/** Actor kind of environments. */
export const ENVIRONMENT_KIND = 'environment';

const SnapshotNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must match [A-Za-z0-9._-]{1,64}');
const PathSchema = z
  .string()
  .min(1)
  .refine((p) => !p.split('/').includes('..'), { error: "must not contain '..'" });

/** What a caller passes as `create.spec`. */
export const EnvironmentSpecInputSchema = z
  .object({
    /** Environment kind (a backend the host offers). @default 'desktop' */
    kind: z.enum(['desktop', 'vm']).default('desktop'),
    /**
     * Image: Docker image for `desktop`; for `vm` a VM image name (`vm-desktop`, which
     * `troupe-desktop[:tag]` also names). @default 'troupe-desktop:latest'
     */
    image: z.string().min(1).default('troupe-desktop:latest'),
    /** Screen width. @default 1280 */
    width: z.int().min(320).max(3840).default(1280),
    /** Screen height. @default 800 */
    height: z.int().min(240).max(2160).default(800),
    /** Memory limit. @default 1024 */
    memoryMb: z.int().min(256).max(65_536).default(1024),
    /** CPU limit. @default 1 */
    cpus: z.number().positive().max(64).default(1),
    /** Process limit. @default 512 */
    pidsLimit: z.int().min(16).max(32_768).default(512),
  })
  .strict();
/** What a caller passes as `create.spec`. */
export type EnvironmentSpecInput = z.input<typeof EnvironmentSpecInputSchema>;

/** Payload of `create`. */
export const CreateEnvironmentMessageSchema = z
  .object({ spec: EnvironmentSpecInputSchema.default({} as never), jobId: JobIdSchema.optional() })
  .strict();
/** Payload of the messages that take nothing. */
export const EmptyEnvironmentMessageSchema = z.object({}).strict();
/** Payload of `act`: one `computer_13` action (checked against the screen by the handler). */
export const ActMessageSchema = z.object({ action: z.unknown() }).strict();
/** Payload of `runCommand`. */
export const RunCommandMessageSchema = z
  .object({
    cmd: CommandSchema,
    /** @default 60000 */
    timeoutMs: z.int().min(1).max(3_600_000).optional(),
    cwd: PathSchema.optional(),
    stdin: z.string().optional(),
  })
  .strict();
/** Payload of `launch`. */
export const LaunchMessageSchema = z
  .object({
    cmd: CommandSchema,
    /** Wait for a window whose title matches this regular expression. */
    waitTitle: z.string().min(1).optional(),
    /** @default 30000 */
    timeoutMs: z.int().min(1).max(600_000).optional(),
  })
  .strict();
/** Payload of `getFile`. */
export const GetFileMessageSchema = z
  .object({
    path: PathSchema,
    /** @default 524288 */
    maxBytes: z.int().min(1).max(524_288).optional(),
  })
  .strict();
/** Payload of `putFile`: text, or `{base64, mode?}`. */
export const PutFileMessageSchema = z.object({ path: PathSchema, file: WireFileSchema }).strict();
/** Payload of `snapshot`, `restore` and `deleteSnapshot`. */
export const SnapshotNameMessageSchema = z.object({ name: SnapshotNameSchema }).strict();

/** Every message of the environment actor and its payload schema. */
export const EnvironmentMessages = {
  create: CreateEnvironmentMessageSchema,
  screenshot: EmptyEnvironmentMessageSchema,
  windows: EmptyEnvironmentMessageSchema,
  act: ActMessageSchema,
  runCommand: RunCommandMessageSchema,
  launch: LaunchMessageSchema,
  getFile: GetFileMessageSchema,
  putFile: PutFileMessageSchema,
  snapshot: SnapshotNameMessageSchema,
  restore: SnapshotNameMessageSchema,
  listSnapshots: EmptyEnvironmentMessageSchema,
  reset: EmptyEnvironmentMessageSchema,
  status: EmptyEnvironmentMessageSchema,
  destroy: EmptyEnvironmentMessageSchema,
} as const;

/** Where an environment actor is in its life. */
export const EnvironmentActorStatus = {
  NEW: 'new',
  READY: 'ready',
  LOST: 'lost',
  DESTROYED: 'destroyed',
} as const;

/** Persisted state of an environment actor. */
export const EnvironmentActorStateSchema = z.object({
  status: z.enum(EnvironmentActorStatus),
  kind: z.enum(['desktop', 'vm']).optional(),
  /** Environment id (`env-…`, the `troupe.sandbox` label). */
  environmentId: z.string().optional(),
  /** Container id. */
  backendId: z.string().optional(),
  hostId: z.string().optional(),
  jobId: z.string().optional(),
  screen: z.object({ width: z.number(), height: z.number() }).optional(),
  /** sha256 of the creating request: `create` is idempotent for it. */
  specDigest: z.string().optional(),
  createdAtMs: z.number().int().nonnegative(),
  lostReason: z.string().optional(),
});
/** Persisted state of an environment actor. */
export type EnvironmentActorState = z.infer<typeof EnvironmentActorStateSchema>;

/** Reply to `create` and `status`. */
export interface EnvironmentStatusReply {
  environmentId: string;
  status: EnvironmentActorState['status'];
  kind?: string;
  hostId?: string;
  backendId?: string;
  screen?: { width: number; height: number };
  lostReason?: string;
}
/** Reply to `screenshot`. */
export interface ScreenshotReply {
  /** PNG, base64. */
  pngBase64: string;
  width: number;
  height: number;
}
/** Reply to `windows`. */
export type WindowsReply = WindowListing;
/** Reply to `act`. */
export interface ActReply {
  pointer: { x: number; y: number };
  terminal: boolean;
}
/** Reply to `launch`. */
export interface LaunchReply {
  window?: WindowInfo;
}
/** Reply to `getFile`. */
export interface GetFileReply {
  base64: string;
  size: number;
}
