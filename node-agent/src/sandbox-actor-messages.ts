import { NamePattern } from '@troupe/proto';
import { z } from 'zod';
import { ArtifactNameSchema } from './artifact-store';
import type {
  BackgroundTaskStatus,
  TaskOutput,
  ExecResult,
  SandboxMetadata,
  SandboxSnapshot,
  SandboxStatus,
} from './sandbox';
import { SandboxSpecSchema } from './sandbox-spec';

/** Actor kind of sandboxes. */
export const SANDBOX_KIND = 'sandbox';

/** A job id, `[A-Za-z0-9_-]{1,128}`. */
export const JobIdSchema = z.string().regex(NamePattern.JOB_ID, 'must match [A-Za-z0-9_-]{1,128}');

/**
 * A file sent over the wire: UTF-8 text, or `{base64, mode?}` for bytes and permission bits.
 */
export const WireFileSchema = z.union([
  z.string(),
  z
    .object({
      /** Content, base64. */
      base64: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64'),
      /** Permission bits. @default 0o644 */
      mode: z.int().min(0).max(0o7777).optional(),
    })
    .strict(),
]);
/** A file sent over the wire (see {@link WireFileSchema}). */
export type WireFile = z.input<typeof WireFileSchema>;

/** Relative path → file, as `create.spec.files` and `putFiles.files` take them. */
export const WireFilesSchema = z.record(z.string(), WireFileSchema);

// The library schema's fields, without its cross-field rules (the handler applies those with the
// labels filled in) and with the wire form of files.
const { labels: _labels, files: _files, ...specShape } = SandboxSpecSchema.shape;

/**
 * The spec a `create` message carries: {@link SandboxSpecSchema} without `labels` — the node agent
 * sets `cluster`, `host`, `actor` (`sandbox/<id>`) and `job` itself — and with files in their wire
 * form. Defaults are the sandbox policy; loosening it is recorded as a policy exception.
 */
export const SandboxSpecInputSchema = z
  .object({
    ...specShape,
    /** Files written into the workspace before `create` returns. @default {} */
    files: WireFilesSchema.default({}),
    labels: z
      .undefined({ error: 'is set by the node agent (cluster, host, actor, job): leave it out' })
      .optional(),
  })
  .strict();
/** What a caller passes as `create.spec`. */
export type SandboxSpecInput = z.input<typeof SandboxSpecInputSchema>;

/** A command: an argv array (run directly) or a string (run with `/bin/sh -c`). */
/** An argv entry: a NUL cannot be passed to a process (spawn would throw). */
const ArgvString = z
  .string()
  .refine((s) => !s.includes('\u0000'), { error: 'must not contain a NUL character' });
export const CommandSchema = z.union([
  z.array(ArgvString).min(1, 'must have at least one element'),
  ArgvString.min(1),
]);

const execFields = {
  cmd: CommandSchema,
  /** Kill the whole process tree after this long. @default 60000 (node agent config) */
  timeoutMs: z.int().min(1).optional(),
  /** Working directory. @default the workspace */
  cwd: z.string().min(1).optional(),
  /** Extra environment (no secret-looking keys unless the spec allowed them). */
  env: z.record(z.string(), z.string()).optional(),
  /**
   * Output kept per stream (head + tail). The reply is further trimmed to fit one NATS message.
   * @default 1048576 (node agent config)
   */
  maxOutputBytes: z.int().min(0).optional(),
};

/** `create`: creates the sandbox (idempotent for the same spec and jobId). */
export const CreateSandboxMessageSchema = z
  .object({ spec: SandboxSpecInputSchema, jobId: JobIdSchema.optional() })
  .strict();
/** `exec`: runs a command to completion or timeout. */
export const ExecMessageSchema = z
  .object({
    ...execFields,
    /** Text written to stdin, which is then closed. */ stdin: z.string().optional(),
  })
  .strict();
/** `startBackground`: starts a command in the background. */
export const StartBackgroundMessageSchema = z
  .object({
    ...execFields,
    /** Kill the task's whole process tree after this long. @default no limit */
    timeoutMs: z.int().min(1).optional(),
    /** Keep stdin open (`writeStdin`) and stdout readable by offset (`readOutput`). @default false */
    interactive: z.boolean().optional(),
    /**
     * The caller's name for this start: a `startBackground` with a key the sandbox has recorded
     * starts nothing and answers the recorded command's task id (`repeated: true`), so an ask
     * that runs twice (asked again after an answer was lost, or delivered to an activation
     * twice) never runs its command twice.
     */
    idempotencyKey: z.string().min(1).max(200).optional(),
  })
  .strict();
/** `writeStdin`: writes to an interactive task's stdin. */
export const WriteStdinMessageSchema = z
  .object({
    taskId: z.string().min(1).max(128),
    /** Text to write. */
    data: z.string().max(512 * 1024),
    /** Close stdin after writing. @default false */
    close: z.boolean().optional(),
  })
  .strict();
/**
 * `readOutput`: an interactive task's stdout from `fromOffset`, waiting up to `waitMs` for new
 * output. `write` is written to stdin first: the actor handles one message at a time, so a
 * separate `writeStdin` could not pass a read that waits; one message sends a request and waits
 * for its answer.
 */
export const ReadOutputMessageSchema = z
  .object({
    taskId: z.string().min(1).max(128),
    fromOffset: z.int().min(0),
    /** @default 0 */
    waitMs: z.int().min(0).max(30_000).optional(),
    /** @default 262144 */
    maxBytes: z
      .int()
      .min(1)
      .max(256 * 1024)
      .optional(),
    /** Written to stdin before reading. */
    write: z
      .string()
      .max(512 * 1024)
      .optional(),
  })
  .strict();
/** `poll` and `kill`: one background task. */
export const TaskMessageSchema = z.object({ taskId: z.string().min(1).max(128) }).strict();
/** `wait`: waits up to `timeoutMs` for a background task to end. */
export const WaitMessageSchema = z
  .object({ taskId: z.string().min(1).max(128), timeoutMs: z.int().min(0) })
  .strict();
/** `putFiles`: writes a file map or a tar from the object store under `destDir`. */
export const PutFilesMessageSchema = z
  .object({
    /** Directory inside the workspace (or an extra volume). */
    destDir: z.string().min(1),
    /** Files to write (relative paths). */
    files: WireFilesSchema.optional(),
    /** Object name of a tar in the artifact store to unpack. */
    artifact: ArtifactNameSchema.optional(),
    /** Owner of what is written. @default 'sandbox' */
    owner: z.enum(['sandbox', 'root', 'preserve']).optional(),
  })
  .strict()
  .superRefine((m, ctx) => {
    if ((m.files === undefined) === (m.artifact === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['files'],
        message: 'give exactly one of files and artifact',
      });
    }
  });
/** `getFiles`: a tar of `srcPath`, inline (small trees). */
export const GetFilesMessageSchema = z
  .object({
    /** File or directory; `/workspace/.` gives the workspace's contents. */
    srcPath: z.string().min(1),
    /** Refuse trees whose tar is larger. @default 524288 (and at most that) */
    maxBytes: z.int().min(1).optional(),
  })
  .strict();
/** `exportFiles`: a tar of `srcPath` written to the artifact store. */
export const ExportFilesMessageSchema = z
  .object({
    /** File or directory; `/workspace/.` exports the workspace's contents (what graders take). */
    srcPath: z.string().min(1),
    /** Object name to write, e.g. `jobs/<jobId>/tasks/<taskId>/workspace.tar`. */
    artifact: ArtifactNameSchema,
    /** Extra metadata kept with the object. */
    meta: z.record(z.string(), z.string()).optional(),
  })
  .strict();
/** `snapshot`: saves the workspace as an image on this host. */
export const SnapshotMessageSchema = z
  .object({
    tag: z
      .string()
      .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/, 'must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,63}'),
  })
  .strict();
/** `destroy` and `status`: no payload. */
export const EmptyMessageSchema = z.object({}).strict();

/** How a background command ended, as a sandbox records it (output tails). */
export const CommandEndSchema = z.object({
  state: z.enum(['exited', 'killed', 'timed-out', 'failed']),
  exitCode: z.number().int().optional(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutDroppedBytes: z.number().int().nonnegative(),
  stderrDroppedBytes: z.number().int().nonnegative(),
  oomKilled: z.boolean().optional(),
  durationMs: z.number().nonnegative(),
  error: z.string().optional(),
});

/**
 * `commandEnded` (posted, no reply): a background command of this sandbox ended while no
 * activation could record it, and whoever learned of the end reports it, so the next activation,
 * on any host, records it: a fenced activation (cut off from NATS) reads the end from its
 * container; a node agent restarted after a crash reads, before removing the container of its
 * predecessor, the exit codes Docker kept (not the output, which went with the killed process).
 * An end already recorded is kept.
 */
export const CommandEndedMessageSchema = z
  .object({ taskId: z.string().min(1).max(200), ended: CommandEndSchema })
  .strict();

/** Every message of the sandbox actor, by type. */
export const SandboxMessages = {
  create: CreateSandboxMessageSchema,
  exec: ExecMessageSchema,
  startBackground: StartBackgroundMessageSchema,
  poll: TaskMessageSchema,
  wait: WaitMessageSchema,
  kill: TaskMessageSchema,
  writeStdin: WriteStdinMessageSchema,
  readOutput: ReadOutputMessageSchema,
  putFiles: PutFilesMessageSchema,
  getFiles: GetFilesMessageSchema,
  exportFiles: ExportFilesMessageSchema,
  snapshot: SnapshotMessageSchema,
  destroy: EmptyMessageSchema,
  status: EmptyMessageSchema,
  commandEnded: CommandEndedMessageSchema,
} as const;

/** Payload of `create`. */
export type CreateSandboxMessage = z.input<typeof CreateSandboxMessageSchema>;
/** Payload of `exec`. */
export type ExecMessage = z.input<typeof ExecMessageSchema>;
/** Payload of `startBackground`. */
export type StartBackgroundMessage = z.input<typeof StartBackgroundMessageSchema>;
/** Payload of `putFiles`. */
export type PutFilesMessage = z.input<typeof PutFilesMessageSchema>;
/** Payload of `getFiles`. */
export type GetFilesMessage = z.input<typeof GetFilesMessageSchema>;
/** Payload of `exportFiles`. */
export type ExportFilesMessage = z.input<typeof ExportFilesMessageSchema>;

/** Where a sandbox actor is in its life. */
export const SandboxActorStatus = {
  /** Never created (or a `create` failed). */
  NEW: 'new',
  /** Its container is live on `hostId`. */
  READY: 'ready',
  /** Its container ended with an earlier activation: every call fails with "sandbox lost". */
  LOST: 'lost',
  /** Destroyed by `destroy`; the id cannot be used again. */
  DESTROYED: 'destroyed',
} as const;
/** One of {@link SandboxActorStatus}. */
export type SandboxActorStatus = (typeof SandboxActorStatus)[keyof typeof SandboxActorStatus];

/** The spec as kept in the actor's state: file contents left out, secret env values redacted. */
export const StoredSandboxSpecSchema = z.object({
  ...specShape,
  /** Paths of the files written at creation. */
  fileNames: z.array(z.string()),
  policyExceptions: z.array(z.string()),
});

/** Persisted state of a sandbox actor. */
/** Characters of each output stream a recorded command keeps (its tail). */
export const RECORDED_OUTPUT_CHARS = 4_096;
/** Background commands a sandbox's state remembers (the latest). */
export const MAX_RECORDED_COMMANDS = 8;

/**
 * A background command as the sandbox's persisted state remembers it: started, and how it ended
 * once a call (`wait`, `poll`, `kill`, `status`, `destroy`) saw it end. It outlives the container,
 * so a caller that lost track of the command (its own crash, a retry after a fault) can learn that
 * it already finished instead of running it again.
 */
export const RecordedCommandSchema = z.object({
  taskId: z.string(),
  startedAtMs: z.number().int().nonnegative(),
  /** The backend's handle of the command (Docker: its exec id), read by a restarted agent. */
  handle: z.string().optional(),
  /** The `idempotencyKey` it was started with. */
  idempotencyKey: z.string().optional(),
  /** How it ended (output tails of at most {@link RECORDED_OUTPUT_CHARS} each); absent while running or unseen. */
  ended: CommandEndSchema.optional(),
});
/** A background command in a sandbox's persisted state. */
export type RecordedCommand = z.infer<typeof RecordedCommandSchema>;
/** How a background command ended, in a sandbox's persisted state. */
export type CommandEnd = z.infer<typeof CommandEndSchema>;

export const SandboxActorStateSchema = z.object({
  status: z.enum(SandboxActorStatus),
  spec: StoredSandboxSpecSchema.optional(),
  /** sha256 of the creating request (spec, files, jobId): `create` is idempotent for it. */
  specDigest: z.string().optional(),
  /** Docker container id (docker backend). */
  containerId: z.string().optional(),
  /** The sandbox layer's id (`sbx-…`, the `troupe.sandbox` label). */
  backendSandboxId: z.string().optional(),
  backend: z.enum(['docker', 'process']).optional(),
  /** Host holding the container: the actor is pinned there while its activation lives. */
  hostId: z.string().optional(),
  /** When the sandbox was created (0 before). */
  createdAtMs: z.number().int().nonnegative(),
  destroyedAtMs: z.number().int().nonnegative().optional(),
  jobId: z.string().optional(),
  /** Why the sandbox is `lost`. */
  lostReason: z.string().optional(),
  /** Its background commands, oldest first (at most {@link MAX_RECORDED_COMMANDS}). */
  commands: z.array(RecordedCommandSchema).optional(),
});
/** Persisted state of a sandbox actor. */
export type SandboxActorState = z.infer<typeof SandboxActorStateSchema>;

/** Reply to `create`. */
export interface CreateSandboxReply {
  /** The actor id. */
  sandboxId: string;
  /** The sandbox layer's status (`ready`). */
  status: SandboxStatus;
  /** Facts about the sandbox: container id, image, labels, policy exceptions, … */
  metadata: SandboxMetadata;
}
/** Reply to `exec`: exactly what the sandbox layer returns (output trimmed to fit a message). */
export type ExecReply = ExecResult;
/**
 * The wire shape of {@link ExecReply}, for callers of the sandbox actor's `exec` to validate what
 * they receive. Loose: fields a newer node agent adds pass through.
 */
export const ExecReplySchema = z.looseObject({
  /** Exit status; `128 + n` when killed by signal `n`. */
  exitCode: z.number(),
  stdout: z.string(),
  stderr: z.string(),
  /** Bytes of stdout dropped between head and tail. */
  stdoutDroppedBytes: z.number(),
  /** Bytes of stderr dropped between head and tail. */
  stderrDroppedBytes: z.number(),
  timedOut: z.boolean(),
  oomKilled: z.boolean().optional(),
  /** Why the sandbox is unusable, when the command took its container down. */
  sandboxFailure: z.string().optional(),
  durationMs: z.number(),
}) satisfies z.ZodType<ExecReply>;
/** Reply to `startBackground`. */
export interface StartBackgroundReply {
  taskId: string;
  /** The command was already started with this `idempotencyKey`: nothing was started now. */
  repeated?: true;
}
/** Reply to `readOutput` (see `Sandbox.readOutput`). */
export type ReadOutputReply = TaskOutput;
/** Reply to `poll`, `wait` and `kill`. */
export type TaskStatusReply = BackgroundTaskStatus;
/** Reply to `putFiles`. */
export interface PutFilesReply {
  /** The artifact unpacked, with its size and digest (when `artifact` was given). */
  artifact?: { name: string; size: number; digest: string };
}
/** Reply to `getFiles`. */
export interface GetFilesReply {
  /** The tar, base64. */
  tarBase64: string;
  /** Bytes of the tar. */
  size: number;
}
/** Reply to `exportFiles`. */
export interface ExportFilesReply {
  artifact: string;
  size: number;
  /** sha256 hex of the tar. */
  digest: string;
}
/** Reply to `snapshot`. */
export type SnapshotReply = Omit<SandboxSnapshot, 'spec'> & { tag: string };
/** Reply to `destroy`. */
export type DestroyReply = Record<string, never>;
/** Reply to `status` (which, unlike the other calls, also answers for a lost sandbox). */
export interface SandboxStatusReply {
  sandboxId: string;
  status: SandboxActorStatus;
  hostId?: string;
  containerId?: string;
  jobId?: string;
  createdAtMs: number;
  lostReason?: string;
  /** Live facts, while `ready`. */
  metadata?: SandboxMetadata;
  /**
   * Its background commands and how each ended, in every status (`destroyed` and `lost` too):
   * what a caller that lost track of a command reads before running it again.
   */
  commands: RecordedCommand[];
}
