import { type ActorAddress, fromZodError, TroupeError, validateActorKind } from '@troupe/proto';
import { type z } from 'zod';
import { type ActorContext } from './actor-context';
import { type RefFactory } from './ref-factory';

/** What a handler returns: the new state (omit to keep it) and, for `ask`, the reply. */
export interface HandlerResult<S, R = unknown> {
  state?: S;
  reply?: R;
}

/** A message handler: runs as one turn of the actor; may be async. */
export type Handler<S, M, R = unknown> = (
  ctx: ActorContext<S>,
  msg: M,
  state: S,
) => HandlerResult<S, R> | void | Promise<HandlerResult<S, R> | void>;

/** Message schemas of an actor, by message type name. */
export type MessageSchemas = Record<string, z.ZodType>;

/** Handlers matching a set of message schemas. */
export type HandlersFor<S, M extends MessageSchemas> = {
  [K in keyof M]: Handler<S, z.output<M[K]>, unknown>;
};

/** What a caller passes to {@link defineActor}. */
export interface ActorDefinitionOptions<
  SS extends z.ZodType,
  M extends MessageSchemas,
  H extends HandlersFor<z.output<SS>, M>,
> {
  /** Actor kind, `[a-z][a-z0-9-]{0,31}`. */
  kind: string;
  /** Schema of the persisted state; checked on load and after every handler. */
  state: SS;
  /** State of an actor that has never committed. */
  initialState: (id: string) => z.output<SS>;
  /** Message schemas by type; every inbound payload is validated against them. */
  messages: M;
  /** One handler per message type. */
  handlers: H;
  /** Called when an activation starts, before the first message; may replace the state. */
  onActivate?: (
    ctx: ActorContext<z.output<SS>>,
    state: z.output<SS>,
  ) => Promise<HandlerResult<z.output<SS>> | void> | HandlerResult<z.output<SS>> | void;
  /** Called when an activation is passivated or its host shuts down (not on a crash). */
  onDeactivate?: (ctx: ActorContext<z.output<SS>>, state: z.output<SS>) => Promise<void> | void;
  /**
   * Called once, synchronously, when an activation ends by fencing (a newer activation of the
   * actor exists, or the coordinator declared its host dead): it can no longer commit, so there
   * is no context, only its address, its epoch and refs that send as the actor. For letting go
   * of what the activation held in this process (a container, a socket), and for posting what
   * only it knows to the next activation (posts are not fenced); an error thrown here is logged
   * and ignored.
   */
  onFenced?: (self: ActorAddress, epoch: number, refs: RefFactory) => void;
  /**
   * Called for a posted message whose payload fails validation (or is not JSON), just before it
   * is dead-lettered: a chance to tell whoever waits for its outcome (an agent records a refused
   * run's end). A returned state is committed with the inbox cursor. The message is dead-lettered
   * whatever this does; an error thrown here is logged and ignored, except a store outage or
   * fencing, which retries the message as for any turn.
   */
  onInvalid?: (
    ctx: ActorContext<z.output<SS>>,
    invalid: InvalidMessage,
    state: z.output<SS>,
  ) => Promise<HandlerResult<z.output<SS>> | void> | HandlerResult<z.output<SS>> | void;
  /**
   * Passivate after this long without a message.
   * @default 60000
   */
  idleTimeoutMs?: number;
  /**
   * Attempts for a posted message whose handler throws, before it is dead-lettered.
   * @default 3
   */
  maxAttempts?: number;
  /**
   * Record RUNNING in the directory while a turn runs (for long turns such as agent loops, so a
   * directed invocation of a running instance is refused with BUSY cluster-wide).
   * @default false
   */
  trackRunning?: boolean;
  /**
   * Validate the state against `state` at every `ctx.checkpoint()`. The state is always validated
   * when a turn returns it and when an activation loads it; a long turn that checkpoints a large
   * state often, built only from validated parts (an agent's step loop), may skip the check at
   * checkpoints, where parsing the whole state costs more than the rest of the checkpoint.
   * @default true
   */
  validateCheckpoints?: boolean;
  /**
   * The actor works for one job and is garbage once that job has finished: its directory entry
   * carries the job (`retireWithJob`), and a coordinator with an actor retention deletes its
   * directory entry, state and inbox that long after the job finished (docs/actors.md,
   * Retirement). For per-task actors (task actors, sandboxes); never for an actor a job's results
   * are read from.
   * @default false
   */
  retireWithJob?: boolean;
}

/** A posted message that failed validation (see {@link ActorDefinitionOptions.onInvalid}). */
export interface InvalidMessage {
  /** Its message type (from the `Troupe-Type` header). */
  type: string;
  /** The decoded payload as sent, unvalidated (untrusted); undefined when it is not JSON. */
  payload: unknown;
  /** The validation error, naming the field and the rule (`INVALID_ARGUMENT`). */
  error: TroupeError;
}

/** A validated actor definition, as hosted by an {@link ActorSystem}. */
export interface ActorDefinition<
  SS extends z.ZodType = z.ZodType,
  M extends MessageSchemas = MessageSchemas,
  H extends HandlersFor<z.output<SS>, M> = HandlersFor<z.output<SS>, M>,
> extends Required<
  Omit<ActorDefinitionOptions<SS, M, H>, 'onActivate' | 'onDeactivate' | 'onFenced' | 'onInvalid'>
> {
  onActivate?: ActorDefinitionOptions<SS, M, H>['onActivate'];
  onDeactivate?: ActorDefinitionOptions<SS, M, H>['onDeactivate'];
  onFenced?: ActorDefinitionOptions<SS, M, H>['onFenced'];
  onInvalid?: ActorDefinitionOptions<SS, M, H>['onInvalid'];
}

/** Type-erased definition for runtime code that hosts any kind. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyActorDefinition = ActorDefinition<z.ZodType, MessageSchemas, any>;

/** The reply type of message `K` of definition `D`. */
export type ReplyOf<D, K extends PropertyKey> = D extends { handlers: infer H }
  ? K extends keyof H
    ? H[K] extends (...args: never[]) => infer R
      ? Awaited<R> extends { reply?: infer Y }
        ? Y
        : undefined
      : never
    : never
  : never;

/** The message input type of message `K` of definition `D`. */
export type MessageOf<D, K extends PropertyKey> = D extends { messages: infer M }
  ? K extends keyof M
    ? M[K] extends z.ZodType
      ? z.input<M[K]>
      : never
    : never
  : never;

/** Message type names of definition `D`. */
export type MessageTypeOf<D> = D extends { messages: infer M } ? keyof M & string : never;

/** Defines an actor kind; validates the kind name and fills defaults. */
export function defineActor<
  SS extends z.ZodType,
  M extends MessageSchemas,
  H extends HandlersFor<z.output<SS>, M>,
>(options: ActorDefinitionOptions<SS, M, H>): ActorDefinition<SS, M, H> {
  validateActorKind(options.kind);
  for (const type of Object.keys(options.messages)) {
    if (typeof (options.handlers as Record<string, unknown>)[type] !== 'function') {
      throw new TypeError(`actor ${options.kind}: message type '${type}' has no handler`);
    }
    if (type.startsWith('$')) {
      throw new TypeError(`actor ${options.kind}: message type '${type}': '$' is reserved`);
    }
  }
  return {
    ...options,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    maxAttempts: options.maxAttempts ?? 3,
    trackRunning: options.trackRunning ?? false,
    validateCheckpoints: options.validateCheckpoints ?? true,
    retireWithJob: options.retireWithJob ?? false,
  };
}

/**
 * A message of type `type` checked against the definition's schema for it (the parsed copy), or
 * INVALID_ARGUMENT naming the type (unknown) or the field and the rule broken.
 */
export function parseMessage(def: AnyActorDefinition, type: string, payload: unknown): unknown {
  // Own keys only: a type such as `toString` or `__proto__` names no message of any kind.
  const schema = Object.hasOwn(def.messages, type) ? def.messages[type] : undefined;
  if (!schema) {
    const known = Object.keys(def.messages).join(', ');
    throw new TroupeError(
      'INVALID_ARGUMENT',
      `type: '${type}' is not a message of actor kind '${def.kind}' (known: ${known})`,
    );
  }
  const parsed = schema.safeParse(payload);
  if (!parsed.success) throw fromZodError(parsed.error, { prefix: type });
  return parsed.data;
}
