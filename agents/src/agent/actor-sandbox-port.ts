import { type RefFactory, type UntypedActorRef } from '@troupe/actors';
import { ErrorCode, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import type {
  SandboxExecResult,
  SandboxJobStatus,
  SandboxOutput,
  SandboxPort,
} from './sandbox-port';

/** Actor kind of the node agent's sandboxes (the `sandbox` actor). */
export const SANDBOX_ACTOR_KIND = 'sandbox';

// The parts of the sandbox actor's replies this adapter reads. The node agent owns the message
// schemas; validating what we consume makes a drift fail loudly, naming the field.
const ExecReplySchema = z.looseObject({
  exitCode: z.int(),
  stdout: z.string(),
  stderr: z.string(),
  timedOut: z.boolean(),
});
const StartReplySchema = z.looseObject({ taskId: z.string() });
const OutputReplySchema = z.looseObject({
  data: z.string(),
  offset: z.int(),
  nextOffset: z.int(),
  state: z.string(),
  exitCode: z.int().optional(),
});
const TaskReplySchema = z.looseObject({
  taskId: z.string(),
  state: z.string(),
  exitCode: z.int().optional(),
  stdout: z.string(),
  stderr: z.string(),
});

/** Options of {@link ActorSandboxPort}. */
export interface ActorSandboxPortOptions {
  /** Where refs come from (the actor system, or a turn's `ctx.refs`). */
  refs: RefFactory;
  /** The sandbox actor's id (created by the caller with `create`). */
  sandboxId: string;
  /** Added to a command's timeout for the ask's deadline. @default 30000 */
  askMarginMs?: number;
}

function parseReply<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new TroupeError(ErrorCode.INTERNAL, `sandbox ${what} reply: unexpected shape`, {
      cause: r.error,
    });
  }
  return r.data;
}

function toJob(r: z.output<typeof TaskReplySchema>): SandboxJobStatus {
  return {
    jobId: r.taskId,
    state: r.state,
    ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
    stdout: r.stdout,
    stderr: r.stderr,
  };
}

/**
 * A {@link SandboxPort} over a node agent's `sandbox` actor, by message shape: `exec`,
 * `startBackground`, `poll`, `kill`, `readOutput`. Files are read with `cat` and written through `exec` stdin,
 * so paths follow the same rules as commands (relative to the workspace).
 */
export class ActorSandboxPort implements SandboxPort {
  private readonly ref: UntypedActorRef;
  private readonly marginMs: number;

  constructor(options: ActorSandboxPortOptions) {
    this.ref = options.refs.refOf({ kind: SANDBOX_ACTOR_KIND, id: options.sandboxId });
    this.marginMs = options.askMarginMs ?? 30_000;
  }

  async exec(
    command: string,
    options: { timeoutMs: number; stdin?: string; signal?: AbortSignal },
  ): Promise<SandboxExecResult> {
    return this.execArgv(['/bin/sh', '-c', command], options);
  }

  private async execArgv(
    cmd: string[],
    options: { timeoutMs: number; stdin?: string; signal?: AbortSignal },
  ): Promise<SandboxExecResult> {
    const reply = await this.ref.ask(
      'exec',
      {
        cmd,
        timeoutMs: options.timeoutMs,
        ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
      },
      {
        timeoutMs: options.timeoutMs + this.marginMs,
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
    const r = parseReply(ExecReplySchema, reply, 'exec');
    return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, timedOut: r.timedOut };
  }

  async startBackground(command: string, options: { signal?: AbortSignal }): Promise<string> {
    const reply = await this.ref.ask(
      'startBackground',
      { cmd: ['/bin/sh', '-c', command] },
      { timeoutMs: this.marginMs, ...(options.signal ? { signal: options.signal } : {}) },
    );
    return parseReply(StartReplySchema, reply, 'startBackground').taskId;
  }

  async poll(jobId: string, options: { signal?: AbortSignal }): Promise<SandboxJobStatus> {
    const reply = await this.ref.ask(
      'poll',
      { taskId: jobId },
      { timeoutMs: this.marginMs, ...(options.signal ? { signal: options.signal } : {}) },
    );
    return toJob(parseReply(TaskReplySchema, reply, 'poll'));
  }

  async kill(jobId: string, options: { signal?: AbortSignal }): Promise<SandboxJobStatus> {
    const reply = await this.ref.ask(
      'kill',
      { taskId: jobId },
      { timeoutMs: this.marginMs, ...(options.signal ? { signal: options.signal } : {}) },
    );
    return toJob(parseReply(TaskReplySchema, reply, 'kill'));
  }

  async startInteractive(
    argv: readonly string[],
    options: { env?: Record<string, string>; cwd?: string; signal?: AbortSignal },
  ): Promise<string> {
    const reply = await this.ref.ask(
      'startBackground',
      {
        cmd: [...argv],
        interactive: true,
        ...(options.env && Object.keys(options.env).length > 0 ? { env: options.env } : {}),
        ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      },
      { timeoutMs: this.marginMs, ...(options.signal ? { signal: options.signal } : {}) },
    );
    return parseReply(StartReplySchema, reply, 'startBackground').taskId;
  }

  async readOutput(
    jobId: string,
    options: { fromOffset: number; waitMs: number; write?: string; signal?: AbortSignal },
  ): Promise<SandboxOutput> {
    const reply = await this.ref.ask(
      'readOutput',
      {
        taskId: jobId,
        fromOffset: options.fromOffset,
        waitMs: options.waitMs,
        ...(options.write !== undefined ? { write: options.write } : {}),
      },
      {
        timeoutMs: options.waitMs + this.marginMs,
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
    const r = parseReply(OutputReplySchema, reply, 'readOutput');
    return {
      data: r.data,
      offset: r.offset,
      nextOffset: r.nextOffset,
      state: r.state,
      ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
    };
  }

  async readFile(path: string, options: { signal?: AbortSignal }): Promise<string> {
    const r = await this.execArgv(['cat', '--', path], { timeoutMs: 30_000, ...options });
    if (r.exitCode !== 0) {
      throw new TroupeError(ErrorCode.NOT_FOUND, `cannot read ${path}: ${r.stderr.trim()}`);
    }
    return r.stdout;
  }

  async writeFile(path: string, content: string, options: { signal?: AbortSignal }): Promise<void> {
    const r = await this.execArgv(
      ['/bin/sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'write_file', path],
      { timeoutMs: 30_000, stdin: content, ...options },
    );
    if (r.exitCode !== 0) {
      throw new TroupeError(ErrorCode.INVALID_ARGUMENT, `cannot write ${path}: ${r.stderr.trim()}`);
    }
  }
}
