import { ErrorCode, invalidArgument, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import { agentActionOf, type Action, isTerminalAction, parseAction } from '../environment-actions';
import {
  type ActionResult,
  type CommandResult,
  type Environment,
  type EnvironmentKind,
  type EnvironmentSnapshotInfo,
  GOLDEN_SNAPSHOT,
  type LaunchOptions,
  type RunCommandOptions,
  type Screenshot,
  type WindowInfo,
  type WindowListing,
} from '../environment';
import type { AgentChannel } from './agent-channel';

const SNAPSHOT_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const HOME = '/home/troupe';

const WindowSchema = z.object({
  id: z.number(),
  title: z.string(),
  app: z.string(),
  focused: z.boolean(),
  x: z.number(),
  y: z.number(),
  width: z.number(),
  height: z.number(),
});
const ListingSchema = z.object({
  windows: z.array(WindowSchema),
  focused: z.string().nullable(),
});
const ScreenshotSchema = z.object({ png: z.string(), width: z.number(), height: z.number() });
const PointerSchema = z.object({ pointer: z.object({ x: z.number(), y: z.number() }) });
const CommandSchema = z.object({
  exitCode: z.number(),
  stdout: z.string(),
  stderr: z.string(),
  timedOut: z.boolean(),
});
const FileSchema = z.object({ base64: z.string() });
const SnapshotSchema = z.object({ name: z.string(), size: z.number() });
const SnapshotListSchema = z.object({ snapshots: z.array(z.string()) });
const LaunchSchema = z.object({ window: WindowSchema.optional() });

/**
 * How a backend saves and restores its machine when the agent's home-directory tars are not
 * what it offers (a VM saves the whole machine with QEMU instead). Names arrive validated.
 */
export interface SnapshotStore {
  save(name: string, signal?: AbortSignal): Promise<EnvironmentSnapshotInfo>;
  restore(name: string, signal?: AbortSignal): Promise<void>;
  list(signal?: AbortSignal): Promise<string[]>;
}

/** What an {@link AgentEnvironment} is built from. */
export interface AgentEnvironmentParts {
  id: string;
  kind: EnvironmentKind;
  backendId: string;
  screen: { width: number; height: number };
  channel: AgentChannel;
  /** Snapshots kept outside the agent. @default the agent's home-directory tars */
  snapshots?: SnapshotStore;
  /** Removes the machine behind the channel (the channel is closed first). */
  teardown: (signal?: AbortSignal) => Promise<void>;
}

function snapshotName(name: string): string {
  if (!SNAPSHOT_NAME.test(name)) {
    throw invalidArgument('name', 'must match [A-Za-z0-9._-]{1,64}', name);
  }
  return name;
}

function absolute(path: string, field: string): string {
  if (path.length === 0) throw invalidArgument(field, 'must not be empty');
  if (path.split('/').includes('..')) throw invalidArgument(field, "must not contain '..'", path);
  return path.startsWith('/') ? path : `${HOME}/${path}`;
}

/**
 * An environment driven through the persistent agent (`deploy/images/desktop/agent.py`) that
 * runs inside it: the same protocol whatever hosts the machine, so backends differ only in how
 * they start it and reach the agent.
 */
export class AgentEnvironment implements Environment {
  readonly id: string;
  readonly kind: EnvironmentKind;
  readonly backendId: string;
  readonly screen: { width: number; height: number };
  private readonly channel: AgentChannel;
  private readonly snapshots: SnapshotStore | undefined;
  private readonly teardown: AgentEnvironmentParts['teardown'];
  private destroying: Promise<void> | undefined;

  constructor(parts: AgentEnvironmentParts) {
    this.id = parts.id;
    this.kind = parts.kind;
    this.backendId = parts.backendId;
    this.screen = parts.screen;
    this.channel = parts.channel;
    this.snapshots = parts.snapshots;
    this.teardown = parts.teardown;
  }

  private checkLive(): void {
    if (this.destroying) {
      throw new TroupeError(ErrorCode.NOT_FOUND, `environment ${this.id} was destroyed`);
    }
  }

  private async call<S extends z.ZodType>(
    schema: S,
    op: string,
    fields: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<z.output<S>> {
    this.checkLive();
    const reply = await this.channel.request(op, fields, signal);
    const parsed = schema.safeParse(reply);
    if (!parsed.success) {
      throw new TroupeError(ErrorCode.INTERNAL, `environment agent: malformed ${op} reply`);
    }
    return parsed.data;
  }

  async screenshot(options: { signal?: AbortSignal } = {}): Promise<Screenshot> {
    const r = await this.call(ScreenshotSchema, 'screenshot', {}, options.signal);
    return { png: Buffer.from(r.png, 'base64'), width: r.width, height: r.height };
  }

  async windows(options: { signal?: AbortSignal } = {}): Promise<WindowListing> {
    return this.call(ListingSchema, 'windows', {}, options.signal);
  }

  async act(action: Action, options: { signal?: AbortSignal } = {}): Promise<ActionResult> {
    const parsed = parseAction(action, this.screen);
    const wire = agentActionOf(parsed);
    const terminal = isTerminalAction(parsed);
    // DONE / FAIL change nothing in the machine; the pointer is still reported.
    const r = await this.call(
      PointerSchema,
      'act',
      { action: wire ?? { type: 'WAIT', seconds: 0 } },
      options.signal,
    );
    return { pointer: r.pointer, terminal };
  }

  async runCommand(
    cmd: readonly string[] | string,
    options: RunCommandOptions = {},
  ): Promise<CommandResult> {
    return this.call(
      CommandSchema,
      'run',
      {
        cmd,
        timeoutMs: options.timeoutMs ?? 60_000,
        ...(options.cwd !== undefined ? { cwd: absolute(options.cwd, 'cwd') } : {}),
        ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
      },
      options.signal,
    );
  }

  async launch(
    cmd: readonly string[] | string,
    options: LaunchOptions = {},
  ): Promise<WindowInfo | undefined> {
    if (options.waitTitle !== undefined) {
      try {
        new RegExp(options.waitTitle);
      } catch {
        throw invalidArgument('waitTitle', 'must be a regular expression', options.waitTitle);
      }
    }
    const r = await this.call(
      LaunchSchema,
      'launch',
      {
        cmd,
        timeoutMs: options.timeoutMs ?? 30_000,
        ...(options.waitTitle !== undefined ? { waitTitle: options.waitTitle } : {}),
      },
      options.signal,
    );
    return r.window;
  }

  async getFile(
    path: string,
    options: { maxBytes?: number; signal?: AbortSignal } = {},
  ): Promise<Uint8Array> {
    const r = await this.call(
      FileSchema,
      'getFile',
      { path: absolute(path, 'path'), maxBytes: options.maxBytes ?? 8 * 1024 * 1024 },
      options.signal,
    );
    return Buffer.from(r.base64, 'base64');
  }

  async putFile(
    path: string,
    content: string | Uint8Array,
    options: { mode?: number; signal?: AbortSignal } = {},
  ): Promise<void> {
    const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content);
    await this.call(
      z.object({}),
      'putFile',
      {
        path: absolute(path, 'path'),
        base64: bytes.toString('base64'),
        mode: options.mode ?? 0o644,
      },
      options.signal,
    );
  }

  async snapshot(
    name: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<EnvironmentSnapshotInfo> {
    const valid = snapshotName(name);
    if (this.snapshots) {
      this.checkLive();
      return this.snapshots.save(valid, options.signal);
    }
    return this.call(SnapshotSchema, 'snapshot', { name: valid }, options.signal);
  }

  async restore(name: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    const valid = snapshotName(name);
    if (this.snapshots) {
      this.checkLive();
      return this.snapshots.restore(valid, options.signal);
    }
    await this.call(z.object({}), 'restore', { name: valid }, options.signal);
  }

  async listSnapshots(options: { signal?: AbortSignal } = {}): Promise<string[]> {
    if (this.snapshots) {
      this.checkLive();
      return this.snapshots.list(options.signal);
    }
    return (await this.call(SnapshotListSchema, 'listSnapshots', {}, options.signal)).snapshots;
  }

  async reset(options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.restore(GOLDEN_SNAPSHOT, options);
  }

  destroy(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.destroying ??= (async () => {
      this.channel.close();
      await this.teardown(options.signal);
    })();
    return this.destroying;
  }
}
