import {
  ActorRef,
  type ActorContext,
  defineActor,
  type HandlerResult,
  type RefFactory,
} from '@troupe/actors';
import {
  ErrorCode,
  formatAddress,
  invalidArgument,
  type Logger,
  noopLogger,
  TroupeError,
} from '@troupe/proto';
import { type z } from 'zod';
import type { Environment, EnvironmentBackend, EnvironmentKind } from './environment';
import {
  type ActMessageSchema,
  type ActReply,
  type CreateEnvironmentMessageSchema,
  ENVIRONMENT_KIND,
  type EnvironmentActorState,
  EnvironmentActorStateSchema,
  EnvironmentMessages,
  type EnvironmentStatusReply,
  type GetFileMessageSchema,
  type GetFileReply,
  type LaunchMessageSchema,
  type LaunchReply,
  type PutFileMessageSchema,
  type RunCommandMessageSchema,
  type ScreenshotReply,
  type SnapshotNameMessageSchema,
  type WindowsReply,
} from './environment-actor-messages';
import { type ImagePreparer } from './image-resolver';
import { type PassivateFn, passivateWhenIdle } from './internal/actor-support';
import { digestOf } from './internal/canonical-json';
import { parseAction } from './environment-actions';
import { decodeFiles } from './internal/wire-files';
import type { CommandResult, EnvironmentSnapshotInfo } from './environment';

/** What a caller passes to {@link createEnvironmentActor}. */
export interface EnvironmentActorOptions {
  /** The backends this host offers, one per environment kind. */
  backends: readonly EnvironmentBackend[];
  /** Cluster name, for the `troupe.cluster` label. */
  cluster: string;
  /** This host's id. */
  hostId: string;
  /** Prepares an image before first use (e.g. an {@link ImageResolver}). @default none */
  images?: ImagePreparer;
  /** Passivates an activation that holds no environment, so its slot frees at once. */
  passivate?: PassivateFn;
  /** Passivate (and destroy the environment) after this long without a message. @default 1800000 */
  idleTimeoutMs?: number;
  /** How long `destroy` on passivation may take before it is left to the reaper. @default 30000 */
  destroyTimeoutMs?: number;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

type State = EnvironmentActorState;
type Ctx = ActorContext<State>;
type Result<R> = Promise<HandlerResult<State, R>>;

interface LiveEnvironment {
  env: Environment;
  epoch: number;
}

/**
 * Defines the `environment` actor kind: one actor per desktop environment (the id is the
 * caller's), whose live activation holds one environment from the backend of its `kind`. Pinned
 * like a sandbox: the environment lives exactly as long as the activation that created it, and a
 * later activation reports it `lost` (`UNAVAILABLE`, not retryable). Every message is an ask;
 * payloads are validated, and a bad action is refused with `INVALID_ARGUMENT` naming the field
 * (`act.action.x: must be < the screen width 1280`).
 */
export function createEnvironmentActor(options: EnvironmentActorOptions) {
  const { cluster, hostId } = options;
  const backends = new Map<EnvironmentKind, EnvironmentBackend>(
    options.backends.map((b) => [b.kind, b]),
  );
  const destroyTimeoutMs = options.destroyTimeoutMs ?? 30_000;
  const log = (options.logger ?? noopLogger).child({ component: 'environment-actor' });
  const live = new Map<string, LiveEnvironment>();

  const guarded = passivateWhenIdle(live, options.passivate, log);

  const lost = (id: string, reason: string): TroupeError =>
    new TroupeError(ErrorCode.UNAVAILABLE, `environment lost: ${id}: ${reason}; create a new one`, {
      retryable: false,
      details: { environmentLost: true, environmentId: id },
    });

  const requireLive = (ctx: Ctx, state: State): Environment => {
    const id = ctx.self.id;
    if (state.status === 'new') {
      throw new TroupeError(
        ErrorCode.NOT_FOUND,
        `environment ${id} has not been created: send create first`,
      );
    }
    if (state.status === 'destroyed') {
      throw new TroupeError(ErrorCode.NOT_FOUND, `environment ${id} was destroyed`);
    }
    const held = live.get(id);
    if (state.status === 'lost' || !held || held.epoch !== ctx.epoch) {
      throw lost(id, state.lostReason ?? 'its container is gone');
    }
    return held.env;
  };

  const statusOf = (id: string, state: State): EnvironmentStatusReply => ({
    environmentId: id,
    status: state.status,
    ...(state.kind ? { kind: state.kind } : {}),
    ...(state.hostId ? { hostId: state.hostId } : {}),
    ...(state.backendId ? { backendId: state.backendId } : {}),
    ...(state.screen ? { screen: state.screen } : {}),
    ...(state.lostReason ? { lostReason: state.lostReason } : {}),
  });

  const create = async (
    ctx: Ctx,
    msg: z.output<typeof CreateEnvironmentMessageSchema>,
    state: State,
  ): Result<EnvironmentStatusReply> => {
    const id = ctx.self.id;
    const specDigest = digestOf({ spec: msg.spec, jobId: msg.jobId });
    if (state.status === 'ready') {
      if (state.specDigest !== specDigest) {
        throw new TroupeError(
          ErrorCode.ALREADY_EXISTS,
          `create.spec: environment ${id} already exists with a different spec or jobId`,
          { details: { field: 'create.spec', environmentId: id } },
        );
      }
      requireLive(ctx, state);
      return { reply: statusOf(id, state) };
    }
    if (state.status !== 'new') requireLive(ctx, state);
    const { kind, ...spec } = msg.spec;
    const backend = backends.get(kind);
    if (!backend) {
      throw invalidArgument(
        'create.spec.kind',
        `this host offers ${[...backends.keys()].join(', ') || 'no environment kinds'}`,
        kind,
      );
    }
    if (backend.prepare) await backend.prepare(spec.image, { signal: ctx.signal });
    else await options.images?.prepare(spec.image, { signal: ctx.signal });
    const env = await backend.create(
      {
        ...spec,
        labels: { cluster, host: hostId, actor: formatAddress(ctx.self), job: msg.jobId ?? '' },
      },
      { signal: ctx.signal },
    );
    live.set(id, { env, epoch: ctx.epoch });
    const next: State = {
      status: 'ready',
      kind,
      environmentId: env.id,
      backendId: env.backendId,
      hostId,
      screen: env.screen,
      specDigest,
      createdAtMs: Date.now(),
      ...(msg.jobId ? { jobId: msg.jobId } : {}),
    };
    return { state: next, reply: statusOf(id, next) };
  };

  const on =
    <M, R>(fn: (env: Environment, msg: M, signal: AbortSignal) => Promise<R>) =>
    async (ctx: Ctx, msg: M, state: State): Result<R> => ({
      reply: await fn(requireLive(ctx, state), msg, ctx.signal),
    });

  const destroy = async (ctx: Ctx, _msg: unknown, state: State): Result<Record<string, never>> => {
    if (state.status === 'new' || state.status === 'destroyed') return { reply: {} };
    const held = live.get(ctx.self.id);
    if (held && held.epoch === ctx.epoch) {
      await held.env.destroy();
      live.delete(ctx.self.id);
      // Its container is gone: the slot goes back as soon as this turn is over, not after the
      // quiet period of activations that never held one (as for a sandbox's destroy).
      guarded.promptly(ctx);
    }
    return { state: { ...state, status: 'destroyed' }, reply: {} };
  };

  return defineActor({
    kind: ENVIRONMENT_KIND,
    state: EnvironmentActorStateSchema,
    initialState: (): State => ({ status: 'new', createdAtMs: 0 }),
    messages: EnvironmentMessages,
    // Garbage once its job has finished: the coordinator deletes its records after the retention.
    retireWithJob: true,
    handlers: {
      create: guarded(create),
      screenshot: guarded(
        on(async (env, _m, signal): Promise<ScreenshotReply> => {
          const s = await env.screenshot({ signal });
          return {
            pngBase64: Buffer.from(s.png).toString('base64'),
            width: s.width,
            height: s.height,
          };
        }),
      ),
      windows: guarded(on((env, _m, signal): Promise<WindowsReply> => env.windows({ signal }))),
      act: guarded(
        on((env, m: z.output<typeof ActMessageSchema>, signal): Promise<ActReply> =>
          // Validated here too, so the caller reads the field as it sent it (`act.action.x`).
          env.act(parseAction(m.action, env.screen, 'act.action'), { signal }),
        ),
      ),
      runCommand: guarded(
        on((env, m: z.output<typeof RunCommandMessageSchema>, signal): Promise<CommandResult> =>
          env.runCommand(m.cmd, {
            signal,
            ...(m.timeoutMs !== undefined ? { timeoutMs: m.timeoutMs } : {}),
            ...(m.cwd !== undefined ? { cwd: m.cwd } : {}),
            ...(m.stdin !== undefined ? { stdin: m.stdin } : {}),
          }),
        ),
      ),
      launch: guarded(
        on(async (env, m: z.output<typeof LaunchMessageSchema>, signal): Promise<LaunchReply> => {
          const window = await env.launch(m.cmd, {
            signal,
            ...(m.waitTitle !== undefined ? { waitTitle: m.waitTitle } : {}),
            ...(m.timeoutMs !== undefined ? { timeoutMs: m.timeoutMs } : {}),
          });
          return window ? { window } : {};
        }),
      ),
      getFile: guarded(
        on(async (env, m: z.output<typeof GetFileMessageSchema>, signal): Promise<GetFileReply> => {
          const bytes = await env.getFile(m.path, { maxBytes: m.maxBytes ?? 524_288, signal });
          return { base64: Buffer.from(bytes).toString('base64'), size: bytes.length };
        }),
      ),
      putFile: guarded(
        on(async (env, m: z.output<typeof PutFileMessageSchema>, signal) => {
          const entry = decodeFiles({ [m.path]: m.file }, 'putFile.file')[m.path];
          if (!entry) throw invalidArgument('putFile.file', 'is required');
          await env.putFile(m.path, entry.content, {
            signal,
            ...(entry.mode !== undefined ? { mode: entry.mode } : {}),
          });
          return {};
        }),
      ),
      snapshot: guarded(
        on(
          (
            env,
            m: z.output<typeof SnapshotNameMessageSchema>,
            signal,
          ): Promise<EnvironmentSnapshotInfo> => env.snapshot(m.name, { signal }),
        ),
      ),
      restore: guarded(
        on(async (env, m: z.output<typeof SnapshotNameMessageSchema>, signal) => {
          await env.restore(m.name, { signal });
          return {};
        }),
      ),
      listSnapshots: guarded(
        on(async (env, _m, signal) => ({ snapshots: await env.listSnapshots({ signal }) })),
      ),
      reset: guarded(
        on(async (env, _m, signal) => {
          await env.reset({ signal });
          return {};
        }),
      ),
      status: guarded(async (ctx: Ctx, _m: unknown, state: State) => ({
        reply: statusOf(ctx.self.id, state),
      })),
      destroy: guarded(destroy),
    },
    idleTimeoutMs: options.idleTimeoutMs ?? 1_800_000,
    onActivate: async (ctx, state) => {
      const stale = live.get(ctx.self.id);
      if (stale) {
        live.delete(ctx.self.id);
        await stale.env.destroy().catch((err: unknown) => {
          ctx.log.warn({ err }, 'could not destroy the previous activation’s environment');
        });
      }
      if (state.status !== 'ready') return;
      const lostReason =
        `its container ${(state.backendId ?? 'unknown').slice(0, 12)} on host ` +
        `${state.hostId ?? '?'} ended with an earlier activation`;
      return { state: { ...state, status: 'lost' as const, lostReason } };
    },
    onDeactivate: async (ctx) => {
      const held = live.get(ctx.self.id);
      if (!held || held.epoch !== ctx.epoch) return;
      live.delete(ctx.self.id);
      const timeout = AbortSignal.timeout(destroyTimeoutMs);
      await held.env.destroy({ signal: timeout }).catch((err: unknown) => {
        ctx.log.warn({ err }, 'destroy on passivation failed; the reaper will finish');
      });
    },
  });
}

/** The environment actor's definition type (for typed refs). */
export type EnvironmentActorDefinition = ReturnType<typeof createEnvironmentActor>;

/** A typed ref to environment `id` from any process. */
export function environmentRef(refs: RefFactory, id: string): ActorRef<EnvironmentActorDefinition> {
  return new ActorRef<EnvironmentActorDefinition>(refs.refOf({ kind: ENVIRONMENT_KIND, id }));
}
