import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  type ActorContext,
  ActorRef,
  defineActor,
  type HandlerResult,
  type RefFactory,
  type UntypedActorRef,
} from '@troupe/actors';
import {
  ErrorCode,
  errorCode,
  formatAddress,
  invalidArgument,
  type Logger,
  noopLogger,
  TroupeError,
} from '@troupe/proto';
import { type z } from 'zod';
import { type ArtifactStore } from './artifact-store';
import { type ImagePreparer } from './image-resolver';
import {
  notFoundAt,
  type PassivateFn,
  passivateWhenIdle,
  retryWhileUnavailable,
} from './internal/actor-support';
import { digestOf } from './internal/canonical-json';
import { fitOutput } from './internal/fit-reply';
import { decodeFiles } from './internal/wire-files';
import type { Sandbox, SandboxSnapshot } from './sandbox';
import type { SandboxBackend } from './sandbox-backend';
import {
  type CommandEndedMessageSchema,
  type CreateSandboxMessageSchema,
  type CreateSandboxReply,
  type DestroyReply,
  type EmptyMessageSchema,
  type ExecMessageSchema,
  type ExecReply,
  type ExportFilesMessageSchema,
  type ExportFilesReply,
  type GetFilesMessageSchema,
  type GetFilesReply,
  MAX_RECORDED_COMMANDS,
  RECORDED_OUTPUT_CHARS,
  type CommandEnd,
  type RecordedCommand,
  type PutFilesMessageSchema,
  type PutFilesReply,
  SANDBOX_KIND,
  type SandboxActorState,
  SandboxActorStateSchema,
  SandboxMessages,
  type SandboxStatusReply,
  type SnapshotMessageSchema,
  type SnapshotReply,
  type StartBackgroundMessageSchema,
  type StartBackgroundReply,
  type TaskMessageSchema,
  type ReadOutputMessageSchema,
  type ReadOutputReply,
  type WriteStdinMessageSchema,
  type TaskStatusReply,
  type WaitMessageSchema,
} from './sandbox-actor-messages';
import { isSecretLikeEnvKey, parseSandboxSpec, type SandboxSpec } from './sandbox-spec';
import { type WarmPool } from './warm-pool';

export type { PassivateFn };

/** What a caller passes to {@link createSandboxActor}. */
export interface SandboxActorOptions {
  /** Where sandboxes come from (Docker in production). */
  backend: SandboxBackend;
  /** The cluster's artifact store (`putFiles.artifact`, `exportFiles`). */
  artifacts: ArtifactStore;
  /** Cluster name, for the `troupe.cluster` label. */
  cluster: string;
  /** This host's id, for the `troupe.host` label and the state's `hostId`. */
  hostId: string;
  /** Warm pools; a `create` whose spec equals a pool's (files aside) takes a pooled sandbox. @default [] */
  pools?: readonly WarmPool[];
  /** Prepares an image before first use (e.g. an {@link ImageResolver}). @default none */
  images?: ImagePreparer;
  /**
   * Passivates an activation that holds no container (after `destroy`, a failed `create`, a lost
   * sandbox) so it frees its slot at once instead of after `idleTimeoutMs`. @default none
   */
  passivate?: PassivateFn;
  /**
   * Passivate (and destroy the container) after this long without a message.
   * @default 1800000
   */
  idleTimeoutMs?: number;
  /**
   * Largest reply to send; exec and task output is trimmed from the middle to fit (NATS refuses
   * messages above its `max_payload`, 1 MiB by default).
   * @default 786432
   */
  maxReplyBytes?: number;
  /** Largest tar `getFiles` returns inline. @default 524288 */
  maxInlineBytes?: number;
  /**
   * How long the container of a fenced activation (its host declared dead, say) is kept for a
   * new activation on this host to take over before it is destroyed: about as long as an ask
   * to it may still be waiting before its caller retries. @default 30000
   */
  fencedGraceMs?: number;
  /** How long `destroy` on passivation may take before it is left to the reaper. @default 30000 */
  destroyTimeoutMs?: number;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

/** A sandbox held by a live activation in this process. */
interface LiveSandbox {
  sandbox: Sandbox;
  epoch: number;
  /** Background commands this activation started (their ends are read when it is fenced). */
  commands: string[];
  pool?: WarmPool;
  snapshots: SandboxSnapshot[];
}

type State = SandboxActorState;
type Ctx = ActorContext<State>;
type Result<R> = Promise<HandlerResult<State, R>>;

/** Whether `err` says a sandbox was lost (its container ended with an earlier activation). */
export function isSandboxLost(err: unknown): boolean {
  if (errorCode(err) !== ErrorCode.UNAVAILABLE) return false;
  const details = (err as { details?: Record<string, unknown> }).details;
  return details?.['sandboxLost'] === true;
}

function lostError(id: string, state: State): TroupeError {
  return new TroupeError(
    ErrorCode.UNAVAILABLE,
    `sandbox lost: ${id}: ${state.lostReason ?? 'its container is gone'}; create a new sandbox`,
    {
      // Retrying this sandbox cannot help; the job layer retries with a NEW sandbox.
      retryable: false,
      details: {
        sandboxLost: true,
        sandboxId: id,
        ...(state.hostId ? { hostId: state.hostId } : {}),
      },
    },
  );
}

/**
 * `state` with `status` recorded as how its command ended, or undefined when there is nothing new
 * to record (still running, or already recorded).
 */
function recordEnded(state: State, status: TaskStatusReply): State | undefined {
  const ended = commandEnd(status);
  return ended && recordEnd(state, status.taskId, ended);
}

/** `state` with command `taskId` recorded as ended `ended`; undefined when it already was. */
function recordEnd(state: State, taskId: string, ended: CommandEnd): State | undefined {
  const commands = state.commands ?? [];
  const i = commands.findIndex((c) => c.taskId === taskId);
  if (i >= 0 && commands[i]!.ended) return undefined;
  const record: RecordedCommand =
    i >= 0
      ? { ...commands[i]!, ended }
      : { taskId, startedAtMs: Math.max(0, Date.now() - ended.durationMs), ended };
  const next = i >= 0 ? commands.with(i, record) : [...commands, record];
  return { ...state, commands: next.slice(-MAX_RECORDED_COMMANDS) };
}

/** How a command ended, as the state records it (output tails); undefined while it runs. */
function commandEnd(status: TaskStatusReply): CommandEnd | undefined {
  if (status.state === 'running') return undefined;
  const [stdout, stdoutCut] = keepTail(status.stdout);
  const [stderr, stderrCut] = keepTail(status.stderr);
  return {
    state: status.state,
    ...(status.exitCode !== undefined ? { exitCode: status.exitCode } : {}),
    stdout,
    stderr,
    stdoutDroppedBytes: status.stdoutDroppedBytes + stdoutCut,
    stderrDroppedBytes: status.stderrDroppedBytes + stderrCut,
    ...(status.oomKilled !== undefined ? { oomKilled: status.oomKilled } : {}),
    durationMs: Math.max(0, status.durationMs),
    ...(status.error !== undefined ? { error: status.error } : {}),
  };
}

/** The last {@link RECORDED_OUTPUT_CHARS} characters of `text`, and the bytes cut before them. */
function keepTail(text: string): [string, number] {
  if (text.length <= RECORDED_OUTPUT_CHARS) return [text, 0];
  const cut = text.slice(0, text.length - RECORDED_OUTPUT_CHARS);
  return [text.slice(text.length - RECORDED_OUTPUT_CHARS), Buffer.byteLength(cut)];
}

/**
 * Defines the `sandbox` actor kind: one actor per sandbox (the id is the caller's), whose live
 * activation holds one container. Every message is an ask.
 *
 * **Pinning.** The container lives exactly as long as the activation that created it: on
 * passivation (idle timeout, host shutdown) it is destroyed, and after a crash the reaper removes
 * it. An activation is never moved while live, so calls always reach the host holding the
 * container. A later activation — on any host — finds state `ready` with a container that is
 * gone, marks the sandbox `lost`, and fails every call (except `status` and `destroy`) with
 * `UNAVAILABLE` "sandbox lost", `retryable: false`, `details.sandboxLost: true`
 * ({@link isSandboxLost}): the job layer retries by creating a new sandbox.
 */
export function createSandboxActor(options: SandboxActorOptions) {
  const { backend, artifacts, cluster, hostId } = options;
  const pools = options.pools ?? [];
  const maxReplyBytes = options.maxReplyBytes ?? 786_432;
  const maxInlineBytes = options.maxInlineBytes ?? 524_288;
  const destroyTimeoutMs = options.destroyTimeoutMs ?? 30_000;
  const fencedGraceMs = options.fencedGraceMs ?? 30_000;
  const log = (options.logger ?? noopLogger).child({ component: 'sandbox-actor' });
  // Sandboxes of the live activations in this process, by actor id.
  const live = new Map<string, LiveSandbox>();
  const poolKeys = new Map(pools.map((p) => [poolKey(p.spec), p]));

  const guarded = passivateWhenIdle(live, options.passivate, log);

  const requireLive = (ctx: Ctx, state: State): LiveSandbox => {
    const id = ctx.self.id;
    switch (state.status) {
      case 'new':
        throw new TroupeError(
          ErrorCode.NOT_FOUND,
          `sandbox ${id} has not been created: send create first`,
          { details: { sandboxId: id } },
        );
      case 'destroyed':
        throw new TroupeError(ErrorCode.NOT_FOUND, `sandbox ${id} was destroyed`, {
          details: { sandboxId: id },
        });
      case 'lost':
        throw lostError(id, state);
      case 'ready':
        break;
    }
    const held = live.get(id);
    const dead = held?.sandbox.status === 'destroyed' || held?.sandbox.status === 'failed';
    if (held && dead) {
      // Its container died under it (a failed hard reset, removed behind our back): let go, so
      // the activation passivates and the next one reports the sandbox lost.
      live.delete(id);
      void release(held, 'container died').catch((err: unknown) => {
        ctx.log.warn({ err }, 'could not clean up a dead sandbox');
      });
    }
    if (!held || dead || held.epoch !== ctx.epoch) {
      throw lostError(id, {
        ...state,
        lostReason: `its container ${state.containerId ?? state.backendSandboxId ?? ''} is gone`,
      });
    }
    return held;
  };

  const release = async (held: LiveSandbox, why: string): Promise<void> => {
    const { sandbox } = held;
    try {
      await sandbox.destroy();
    } finally {
      held.pool?.release(sandbox.id);
      for (const snap of held.snapshots) {
        await backend.removeSnapshot(snap).catch((err: unknown) => {
          log.warn({ err, ref: snap.ref }, 'could not remove snapshot');
        });
      }
      log.info({ sandbox: sandbox.id, why }, 'sandbox destroyed');
    }
  };

  /**
   * Removes the container a `create` of this activation made when the state still says `new`:
   * that turn did not commit (the state store timed out during a NATS server's restart), so no
   * state names the container, and only this activation can remove it — a `destroy` answered
   * "nothing to destroy" and left it to the idle timeout (chaos seed 8004: two containers 60 s
   * after their job), and a `create` asked again made a second one beside it.
   */
  const releaseUncommitted = async (ctx: Ctx, state: State, why: string): Promise<void> => {
    const held = live.get(ctx.self.id);
    if (state.status !== 'new' || !held || held.epoch !== ctx.epoch) return;
    live.delete(ctx.self.id);
    await release(held, why);
  };

  const create = async (
    ctx: Ctx,
    msg: z.output<typeof CreateSandboxMessageSchema>,
    state: State,
  ): Result<CreateSandboxReply> => {
    const id = ctx.self.id;
    const jobId = msg.jobId;
    const { files, labels: _labels, ...rest } = msg.spec;
    const labels = { cluster, host: hostId, actor: formatAddress(ctx.self), job: jobId ?? '' };
    // The library's cross-field rules (mount paths, secret env keys, file paths) with the labels
    // filled in; file contents are checked separately.
    const spec = parseSandboxSpec({
      ...rest,
      files: Object.fromEntries(Object.keys(files).map((k) => [k, ''])),
      labels,
    });
    const fileMap = decodeFiles(files, 'spec.files');
    const specDigest = digestOf({ spec: { ...spec, labels: undefined }, files, jobId });
    if (state.status === 'ready') {
      if (state.specDigest !== specDigest) {
        throw new TroupeError(
          ErrorCode.ALREADY_EXISTS,
          `create.spec: sandbox ${id} already exists with a different spec or jobId`,
          { details: { field: 'create.spec', sandboxId: id } },
        );
      }
      const held = requireLive(ctx, state);
      return {
        reply: { sandboxId: id, status: held.sandbox.status, metadata: held.sandbox.metadata() },
      };
    }
    if (state.status !== 'new') requireLive(ctx, state); // throws lost / destroyed
    await releaseUncommitted(ctx, state, 'create not committed, created again');
    const signal = ctx.signal;
    await options.images?.prepare(spec.image, { signal });
    const pool = poolKeys.get(poolKey(spec));
    const libSpec = { ...spec, files: {} };
    const sandbox = pool
      ? await pool.acquire({ signal, owner: { actor: labels.actor, job: labels.job } })
      : await backend.create(libSpec, { signal });
    const held: LiveSandbox = {
      sandbox,
      epoch: ctx.epoch,
      commands: [],
      snapshots: [],
      ...(pool ? { pool } : {}),
    };
    try {
      if (Object.keys(fileMap).length > 0) {
        await sandbox.putFiles(sandbox.spec.workdir, fileMap, { signal });
      }
    } catch (err) {
      await release(held, 'create failed').catch(() => undefined);
      throw err;
    }
    live.set(id, held);
    const meta = sandbox.metadata();
    const next: State = {
      status: 'ready',
      spec: storedSpec(spec, Object.keys(files)),
      specDigest,
      backendSandboxId: meta.id,
      backend: meta.backend,
      hostId,
      createdAtMs: Date.now(),
      ...(meta.containerId ? { containerId: meta.containerId } : {}),
      ...(jobId ? { jobId } : {}),
    };
    ctx.log.info(
      { sandbox: meta.id, image: spec.image, pooled: pool !== undefined, jobId },
      'sandbox created',
    );
    return { state: next, reply: { sandboxId: id, status: sandbox.status, metadata: meta } };
  };

  const exec = async (
    ctx: Ctx,
    msg: z.output<typeof ExecMessageSchema>,
    state: State,
  ): Result<ExecReply> => {
    const { sandbox } = requireLive(ctx, state);
    const { cmd, ...opts } = msg;
    const result = await sandbox.exec(cmd, { ...opts, signal: ctx.signal });
    return { reply: fitOutput(result, maxReplyBytes) };
  };

  const startBackground = async (
    ctx: Ctx,
    msg: z.output<typeof StartBackgroundMessageSchema>,
    state: State,
  ): Result<StartBackgroundReply> => {
    const { cmd, idempotencyKey, ...opts } = msg;
    const started = idempotencyKey
      ? state.commands?.find((c) => c.idempotencyKey === idempotencyKey)
      : undefined;
    if (started) {
      // Recorded before it started (below): the same ask run again finds it whatever became of
      // the sandbox since, and its caller goes on to wait for that command.
      ctx.log.info(
        { taskId: started.taskId, idempotencyKey },
        'startBackground asked again: answering with the command it started',
      );
      return { reply: { taskId: started.taskId, repeated: true } };
    }
    const held = requireLive(ctx, state);
    const withCommand = (taskId: string, handle: string | undefined): State => ({
      ...state,
      commands: [
        ...(state.commands ?? []),
        {
          taskId,
          startedAtMs: Date.now(),
          ...(handle ? { handle } : {}),
          ...(idempotencyKey ? { idempotencyKey } : {}),
        },
      ].slice(-MAX_RECORDED_COMMANDS),
    });
    // The command is recorded, with its handle, before it starts: a node agent killed right
    // after the start (before this turn's commit) left a command that may run to its end
    // unrecorded, and the restarted agent's sweep, finding no handle, removed its container
    // without reading the end — so the command was run again (chaos seed 20260423).
    let recorded: State | undefined;
    let taskId: string;
    try {
      taskId = await held.sandbox.startBackground(cmd, {
        ...opts,
        signal: ctx.signal,
        beforeStart: async (id, handle) => {
          recorded = withCommand(id, handle);
          await ctx.checkpoint(recorded);
        },
      });
    } catch (err) {
      if (recorded) {
        // Recorded but not started: record that it never ran, so nobody waits for it.
        const failed = recordEnded(recorded, {
          taskId: recorded.commands!.at(-1)!.taskId,
          state: 'failed',
          stdout: '',
          stderr: '',
          stdoutDroppedBytes: 0,
          stderrDroppedBytes: 0,
          durationMs: 0,
          error: `the command did not start: ${err instanceof Error ? err.message : String(err)}`,
        });
        if (failed) await ctx.checkpoint(failed).catch(() => undefined);
      }
      throw err;
    }
    held.commands.push(taskId);
    ctx.log.info({ taskId, ...(idempotencyKey ? { idempotencyKey } : {}) }, 'command started');
    return {
      state: recorded ?? withCommand(taskId, held.sandbox.backgroundHandle?.(taskId)),
      reply: { taskId },
    };
  };

  const poll = async (
    ctx: Ctx,
    msg: z.output<typeof TaskMessageSchema>,
    state: State,
  ): Result<TaskStatusReply> => {
    const { sandbox } = requireLive(ctx, state);
    return answer(state, await sandbox.poll(msg.taskId));
  };

  const wait = async (
    ctx: Ctx,
    msg: z.output<typeof WaitMessageSchema>,
    state: State,
  ): Result<TaskStatusReply> => {
    const { sandbox } = requireLive(ctx, state);
    let status: TaskStatusReply;
    try {
      status = await sandbox.wait(msg.taskId, { timeoutMs: msg.timeoutMs, signal: ctx.signal });
    } catch (err) {
      // Still running after timeoutMs: answer with the status so far, not an error.
      if (errorCode(err) !== ErrorCode.TIMEOUT || ctx.signal.aborted) throw err;
      status = await sandbox.poll(msg.taskId);
    }
    return answer(state, status);
  };

  const kill = async (
    ctx: Ctx,
    msg: z.output<typeof TaskMessageSchema>,
    state: State,
  ): Result<TaskStatusReply> => {
    const { sandbox } = requireLive(ctx, state);
    const status = await sandbox.kill(msg.taskId, { signal: ctx.signal });
    return answer(state, status);
  };

  /** A command's status as the reply, recorded in the state the first time it is seen ended. */
  const answer = (state: State, status: TaskStatusReply): HandlerResult<State, TaskStatusReply> => {
    const next = recordEnded(state, status);
    return { ...(next ? { state: next } : {}), reply: fitOutput(status, maxReplyBytes) };
  };

  /** The state with every command that has ended since it was last looked at recorded. */
  const withEndedCommands = async (state: State, sandbox: Sandbox): Promise<State> => {
    let next = state;
    for (const c of state.commands ?? []) {
      if (c.ended) continue;
      const status = await sandbox.poll(c.taskId).catch(() => undefined);
      if (status) next = recordEnded(next, status) ?? next;
    }
    return next;
  };

  /**
   * Posts to `self` the end of every command of `held` as soon as it ends, within `withinMs`
   * (a command still running then is killed with the container, and not reported).
   */
  const reportEnded = async (
    held: LiveSandbox,
    self: UntypedActorRef,
    epoch: number,
    withinMs: number,
  ): Promise<void> => {
    await Promise.all(
      held.commands.map(async (taskId) => {
        const status = await held.sandbox
          .wait(taskId, { timeoutMs: withinMs })
          .catch(() => held.sandbox.poll(taskId))
          .catch(() => undefined);
        const ended = status && commandEnd(status);
        if (!ended) return;
        // Posted again while the inbox's stream does not answer (a NATS server lost): given up
        // at once, the end was recorded nowhere and a retry ran the command again (chaos seed
        // 8016). Until the grace ends, when the container goes anyway.
        await retryWhileUnavailable(
          () =>
            self.post(
              'commandEnded',
              { taskId, ended },
              // Once per command, however many times it is reported.
              { dedupeId: `ended-${self.address.id}-${epoch}-${taskId}` },
            ),
          Date.now() + withinMs,
        );
      }),
    );
  };

  /** Records a command end posted by a fenced activation or a restarted node agent. */
  const commandEnded = async (
    _ctx: Ctx,
    msg: z.output<typeof CommandEndedMessageSchema>,
    state: State,
  ): Result<Record<string, never>> => {
    const next = recordEnd(state, msg.taskId, msg.ended);
    return { ...(next ? { state: next } : {}), reply: {} };
  };

  const writeStdin = async (
    ctx: Ctx,
    msg: z.output<typeof WriteStdinMessageSchema>,
    state: State,
  ): Result<Record<string, never>> => {
    const { sandbox } = requireLive(ctx, state);
    await sandbox.writeStdin(msg.taskId, msg.data, msg.close ? { close: true } : {});
    return { reply: {} };
  };

  const readOutput = async (
    ctx: Ctx,
    msg: z.output<typeof ReadOutputMessageSchema>,
    state: State,
  ): Result<ReadOutputReply> => {
    const { sandbox } = requireLive(ctx, state);
    if (msg.write !== undefined && msg.write.length > 0) {
      await sandbox.writeStdin(msg.taskId, msg.write);
    }
    const { taskId, write: _w, ...opts } = msg;
    return { reply: await sandbox.readOutput(taskId, { ...opts, signal: ctx.signal }) };
  };

  const putFiles = async (
    ctx: Ctx,
    msg: z.output<typeof PutFilesMessageSchema>,
    state: State,
  ): Result<PutFilesReply> => {
    const { sandbox } = requireLive(ctx, state);
    const signal = ctx.signal;
    const owner = msg.owner ?? 'sandbox';
    if (msg.files !== undefined) {
      await sandbox.putFiles(msg.destDir, decodeFiles(msg.files, 'putFiles.files'), {
        owner,
        signal,
      });
      return { reply: {} };
    }
    const name = msg.artifact as string;
    const { info, stream } = await artifacts.getStream(name, { signal }).catch((err: unknown) => {
      throw notFoundAt(err, 'putFiles.artifact');
    });
    try {
      await sandbox.putFiles(msg.destDir, stream, { owner, signal });
    } finally {
      stream.destroy();
    }
    return { reply: { artifact: { name, size: info.size, digest: info.digest } } };
  };

  const getFiles = async (
    ctx: Ctx,
    msg: z.output<typeof GetFilesMessageSchema>,
    state: State,
  ): Result<GetFilesReply> => {
    const { sandbox } = requireLive(ctx, state);
    if (msg.maxBytes !== undefined && msg.maxBytes > maxInlineBytes) {
      throw invalidArgument(
        'getFiles.maxBytes',
        `must be at most ${maxInlineBytes} (the reply is one NATS message); use exportFiles for larger trees`,
        msg.maxBytes,
      );
    }
    const limit = msg.maxBytes ?? maxInlineBytes;
    const stream = await sandbox.getFiles(msg.srcPath, { signal: ctx.signal });
    const tar = await collectAtMost(stream, limit);
    if (tar === undefined) {
      throw invalidArgument(
        'getFiles.maxBytes',
        `the tar of ${msg.srcPath} is larger than ${limit} bytes; use exportFiles for larger trees`,
      );
    }
    return { reply: { tarBase64: tar.toString('base64'), size: tar.length } };
  };

  const exportFiles = async (
    ctx: Ctx,
    msg: z.output<typeof ExportFilesMessageSchema>,
    state: State,
  ): Result<ExportFilesReply> => {
    const { sandbox } = requireLive(ctx, state);
    const stream = await sandbox.getFiles(msg.srcPath, { signal: ctx.signal });
    try {
      const info = await artifacts.put(msg.artifact, stream, {
        contentType: 'application/x-tar',
        meta: {
          ...msg.meta,
          sandbox: ctx.self.id,
          srcPath: msg.srcPath,
          hostId,
          ...(state.jobId ? { jobId: state.jobId } : {}),
        },
        signal: ctx.signal,
      });
      ctx.log.info({ artifact: info.name, size: info.size }, 'files exported');
      return { reply: { artifact: info.name, size: info.size, digest: info.digest } };
    } finally {
      stream.destroy();
    }
  };

  const snapshot = async (
    ctx: Ctx,
    msg: z.output<typeof SnapshotMessageSchema>,
    state: State,
  ): Result<SnapshotReply> => {
    const held = requireLive(ctx, state);
    // Image tags are per cluster on a host: make them per sandbox too.
    const scoped = `${ctx.self.id}.${msg.tag}`;
    const tag =
      scoped.length <= 96
        ? scoped
        : `${createHash('sha256').update(ctx.self.id).digest('hex').slice(0, 16)}.${msg.tag}`;
    const snap = await held.sandbox.snapshot(tag, { signal: ctx.signal });
    held.snapshots.push(snap);
    const { spec: _spec, ...info } = snap;
    return { reply: { ...info, tag: msg.tag } };
  };

  const destroy = async (
    ctx: Ctx,
    _msg: z.output<typeof EmptyMessageSchema>,
    state: State,
  ): Result<DestroyReply> => {
    if (state.status === 'new' || state.status === 'destroyed') {
      await releaseUncommitted(ctx, state, 'destroy');
      return { reply: {} };
    }
    const held = live.get(ctx.self.id);
    let next = state;
    if (held && held.epoch === ctx.epoch) {
      // A command that finished unobserved is recorded before its container goes — committed,
      // not just returned: removing the container cannot be rolled back, and a commit that
      // fails after it (a NATS server lost) would leave the end recorded nowhere and the
      // command to be run again. A store that is unreachable fails the destroy here, with the
      // container and its commands' ends still there for a retry.
      next = await withEndedCommands(state, held.sandbox);
      await ctx.checkpoint(next);
      await release(held, 'destroy');
      live.delete(ctx.self.id);
      // Its container is gone: the slot goes back as soon as this turn is over.
      guarded.promptly(ctx);
      // Commands still running at the checkpoint, as the destroy ended them.
      next = await withEndedCommands(next, held.sandbox);
    }
    return {
      state: { ...next, status: 'destroyed', destroyedAtMs: Date.now() },
      reply: {},
    };
  };

  const status = async (
    ctx: Ctx,
    _msg: z.output<typeof EmptyMessageSchema>,
    state: State,
  ): Result<SandboxStatusReply> => {
    const held = live.get(ctx.self.id);
    const current = held && held.epoch === ctx.epoch && state.status === 'ready';
    const next = current ? await withEndedCommands(state, held.sandbox) : state;
    const reply: SandboxStatusReply = {
      sandboxId: ctx.self.id,
      status: state.status,
      createdAtMs: state.createdAtMs,
      ...(state.hostId ? { hostId: state.hostId } : {}),
      ...(state.containerId ? { containerId: state.containerId } : {}),
      ...(state.jobId ? { jobId: state.jobId } : {}),
      ...(state.lostReason ? { lostReason: state.lostReason } : {}),
      ...(held && state.status === 'ready' ? { metadata: held.sandbox.metadata() } : {}),
      commands: next.commands ?? [],
    };
    return { ...(next !== state ? { state: next } : {}), reply };
  };

  return defineActor({
    kind: SANDBOX_KIND,
    state: SandboxActorStateSchema,
    initialState: (): State => ({ status: 'new', createdAtMs: 0 }),
    messages: SandboxMessages,
    // Garbage once its job has finished: the coordinator deletes its records after the retention.
    retireWithJob: true,
    handlers: {
      create: guarded(create),
      exec: guarded(exec),
      startBackground: guarded(startBackground),
      poll: guarded(poll),
      wait: guarded(wait),
      kill: guarded(kill),
      writeStdin: guarded(writeStdin),
      readOutput: guarded(readOutput),
      putFiles: guarded(putFiles),
      getFiles: guarded(getFiles),
      exportFiles: guarded(exportFiles),
      snapshot: guarded(snapshot),
      destroy: guarded(destroy),
      status: guarded(status),
      commandEnded: guarded(commandEnded),
    },
    idleTimeoutMs: options.idleTimeoutMs ?? 1_800_000,
    onActivate: async (ctx, state) => {
      // A sandbox of an earlier activation in this process (fenced, so never passivated): it can
      // no longer be trusted to match the state, and nothing else would remove it.
      const stale = live.get(ctx.self.id);
      let seen = state;
      if (stale) {
        live.delete(ctx.self.id);
        // Its commands may have ended while that activation could not record it (cut off from
        // NATS, then fenced): read them before the container goes, so a caller can learn they
        // finished rather than run them again.
        seen = await withEndedCommands(state, stale.sandbox);
        await release(stale, 'superseded by a new activation').catch((err: unknown) => {
          ctx.log.warn({ err }, 'could not destroy the previous activation’s sandbox');
        });
        // And those still running then, as the destroy ended them: one that exited on its own
        // just before keeps its exit code (chaos seed 8500: recorded killed, it ran again).
        seen = await withEndedCommands(seen, stale.sandbox);
      }
      if (seen.status !== 'ready') return seen === state ? undefined : { state: seen };
      // The container lived and died with an earlier activation (see "Pinning").
      const container = state.containerId ?? state.backendSandboxId ?? 'unknown';
      const lostReason =
        `its container ${container.slice(0, 12)} on host ${state.hostId ?? '?'} ended with an ` +
        'earlier activation (host restart or crash, shutdown, idle timeout or fencing)';
      ctx.log.warn({ container, hostId: state.hostId }, 'sandbox lost');
      return { state: { ...seen, status: 'lost' as const, lostReason } };
    },
    onFenced: (self, epoch, refs) => {
      const held = live.get(self.id);
      if (!held || held.epoch !== epoch) return;
      // Commands that ended while this activation could not record it (cut off, then fenced),
      // or that end during the grace: the next activation may be on another host, away from
      // this container, so their ends go to it as posts.
      // (Until a second before the container goes, so a command is not reported killed by it.)
      const watchMs = Math.max(0, fencedGraceMs - 1_000);
      void reportEnded(held, refs.refOf(self), epoch, watchMs).catch((err: unknown) => {
        log.warn({ err, sandbox: held.sandbox.id }, 'could not report a fenced sandbox’s commands');
      });
      // A new activation on this host within the grace takes the container over (reading its
      // commands first, see onActivate); otherwise it goes now, not at the reaper's next sweep.
      // (Commands still running then are killed with it: their ends are not reported, and a post
      // held up by a NATS outage does not hold the container.)
      setTimeout(() => {
        if (live.get(self.id) !== held) return;
        live.delete(self.id);
        release(held, 'fenced').catch((err: unknown) => {
          log.warn({ err, sandbox: held.sandbox.id }, 'could not destroy a fenced sandbox');
        });
      }, fencedGraceMs).unref();
    },
    onDeactivate: async (ctx) => {
      const held = live.get(ctx.self.id);
      if (!held || held.epoch !== ctx.epoch) return;
      live.delete(ctx.self.id);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), destroyTimeoutMs);
      });
      try {
        const done = release(held, 'passivated').then(() => 'done' as const);
        if ((await Promise.race([done, timeout])) === 'timeout') {
          ctx.log.warn(
            { sandbox: held.sandbox.id },
            'destroy on passivation timed out; the reaper will finish',
          );
        }
      } catch (err) {
        ctx.log.warn(
          { err, sandbox: held.sandbox.id },
          'destroy on passivation failed; the reaper will finish',
        );
      } finally {
        clearTimeout(timer);
      }
    },
  });
}

/** The sandbox actor's definition type (for typed refs). */
export type SandboxActorDefinition = ReturnType<typeof createSandboxActor>;

/**
 * A typed ref to sandbox `id` from any process (no backend needed): `await
 * sandboxRef(system, 'sb-1').ask('exec', {cmd: ['ls']}, {timeoutMs: 70_000})`.
 */
export function sandboxRef(refs: RefFactory, id: string): ActorRef<SandboxActorDefinition> {
  return new ActorRef<SandboxActorDefinition>(refs.refOf({ kind: SANDBOX_KIND, id }));
}

/** Options that identify a pool: everything but labels and files. */
function poolKey(spec: SandboxSpec): string {
  const { labels: _l, files: _f, policyExceptions: _p, ...rest } = spec;
  return digestOf(rest);
}

/** The spec as stored in state: no file contents, secret-looking env values redacted. */
function storedSpec(spec: SandboxSpec, fileNames: string[]): SandboxActorState['spec'] {
  const { labels: _l, files: _f, ...rest } = spec;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.env)) env[k] = isSecretLikeEnvKey(k) ? '<redacted>' : v;
  return { ...rest, env, policyExceptions: [...spec.policyExceptions], fileNames };
}

/** The whole stream, or `undefined` (and the stream destroyed) once it exceeds `limit` bytes. */
async function collectAtMost(stream: Readable, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      size += buf.length;
      if (size > limit) return undefined;
      chunks.push(buf);
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks);
}
