import { createHash } from 'node:crypto';
import type { Logger } from '@troupe/actors';
import { invalidArgument } from '@troupe/proto';
import type { z } from 'zod';
import type { SandboxPort } from '../agent/sandbox-port';
import type { SandboxProvisioner } from './sandbox-provisioner';
import {
  type HeldSandbox,
  MAIN_SANDBOX,
  type RunSandboxesSchema,
  type TemplateSandbox,
} from './sandbox-template';

/** The sandboxes a run holds by name, or why it cannot start. */
export type SandboxResolution =
  | { ok: false; why: string }
  | { ok: true; held: Record<string, HeldSandbox>; prompt: string | undefined };

/** What {@link resolveSandboxes} reads. */
export interface ResolveSandboxesInput {
  sessionId: string;
  runId: string;
  /** What the session holds from earlier runs (`sandboxId` is the old form of a given `main`). */
  stored: { sandboxId?: string | undefined; sandboxes?: Record<string, HeldSandbox> | undefined };
  /** The run's `sandboxId` (given `main`) and `sandboxes` (given by name). */
  given: { sandboxId?: string | undefined; sandboxes?: z.output<typeof RunSandboxesSchema> };
  /** The template's declared sandboxes. */
  declared: Record<string, TemplateSandbox> | undefined;
  /** The sandbox tools the template holds (a run holding any needs a sandbox). */
  sandboxTools: readonly string[];
  /** The run is a subagent's (its sandboxes are what its parent granted). */
  subagent?: boolean;
}

/**
 * The sandboxes of a new run, by name: those given by earlier runs (kept, like `sandboxId` always
 * was), then those the run gives (`sandboxId` as `main`, `sandboxes`), then those the template
 * declares (to be created on first use, with an id derived from session, run and name, so a
 * repeat after a crash finds the same sandbox). Refused, naming the field: `main` given twice by
 * the run, a name both given by the run and declared by the template, and sandbox tools with no
 * sandbox at all.
 */
export function resolveSandboxes(input: ResolveSandboxesInput): SandboxResolution {
  const { stored, given, declared = {} } = input;
  const held: Record<string, HeldSandbox> = {};
  if (stored.sandboxId) held[MAIN_SANDBOX] = { id: stored.sandboxId };
  for (const [name, h] of Object.entries(stored.sandboxes ?? {})) {
    // Owned sandboxes lived for their run (destroyed at its end); given ones stay.
    if (!h.owned) held[name] = h;
  }
  if (given.sandboxId && given.sandboxes?.[MAIN_SANDBOX] !== undefined) {
    return {
      ok: false,
      why: '`run.sandboxes.main`: give the main sandbox once, as `sandboxId` or as `sandboxes.main`',
    };
  }
  const fromRun: Record<string, HeldSandbox> = {};
  if (given.sandboxId) fromRun[MAIN_SANDBOX] = { id: given.sandboxId };
  for (const [name, g] of Object.entries(given.sandboxes ?? {})) {
    fromRun[name] = typeof g === 'string' ? { id: g } : { ...g };
  }
  for (const name of Object.keys(declared)) {
    if (fromRun[name]) {
      const field =
        name === MAIN_SANDBOX && given.sandboxId ? 'run.sandboxId' : `run.sandboxes.${name}`;
      return {
        ok: false,
        why: `\`${field}\`: the template declares a sandbox '${name}' (it creates its own); give another name or leave it out`,
      };
    }
  }
  Object.assign(held, fromRun);
  for (const [name, spec] of Object.entries(declared)) {
    held[name] = {
      id: ownedSandboxId(input.sessionId, input.runId, name),
      image: spec.image,
      ...(spec.description !== undefined ? { description: spec.description } : {}),
      owned: true,
    };
  }
  if (input.sandboxTools.length > 0 && Object.keys(held).length === 0) {
    if (input.subagent) {
      return {
        ok: false,
        why: `\`run.sandboxes\`: the parent granted no sandbox, and the subagent holds ${input.sandboxTools.join(', ')} (grant one with create_subagent's \`sandboxes\`)`,
      };
    }
    return {
      ok: false,
      why: `\`run.sandboxId\`: required because the template holds ${input.sandboxTools.join(', ')} (or declare \`template.sandboxes\`)`,
    };
  }
  return { ok: true, held, prompt: sandboxPrompt(held) };
}

/**
 * The id of sandbox `name` that run `runId` of session `sessionId` creates: the session id (cut
 * to fit 128 characters), the name and a hash of all three.
 */
export function ownedSandboxId(sessionId: string, runId: string, name: string): string {
  const hash = createHash('sha256')
    .update(`${sessionId}\0${runId}\0${name}`)
    .digest('hex')
    .slice(0, 12);
  const tail = `--sbx-${name}-${hash}`;
  return `${sessionId.slice(0, 128 - tail.length)}${tail}`;
}

/**
 * The sandboxes section of a system prompt: every sandbox with its image and description. None
 * when the session holds only an undescribed `main` (the single-sandbox case, unchanged).
 */
export function sandboxPrompt(held: Record<string, HeldSandbox>): string | undefined {
  const entries = Object.entries(held);
  if (entries.every(([n, h]) => n === MAIN_SANDBOX && !h.image && !h.description)) return undefined;
  const lines = entries.map(([n, h]) => `- ${n}: ${describe(h)}`);
  return (
    `Your sandboxes (each with its own files and programs). The sandbox tools act on the one their ` +
    `\`sandbox\` argument names (default \`${MAIN_SANDBOX}\`):\n${lines.join('\n')}`
  );
}

function describe(h: HeldSandbox): string {
  const image = h.image ? `image ${h.image}` : 'image not told';
  return h.description ? `${image}; ${h.description.replace(/\s+/g, ' ')}` : image;
}

/** The held sandboxes as a tool error lists them: `main (image troupe-busybox), tools (…)`. */
export function heldList(held: Record<string, HeldSandbox>): string {
  const names = Object.entries(held).map(([n, h]) => (h.image ? `${n} (${h.image})` : n));
  return names.join(', ') || 'none';
}

/** What {@link SessionSandboxes} works with (from its agent turn). */
export interface SessionSandboxesOptions {
  /** The session's working state: its held sandboxes, its template's declarations, its run. */
  session: {
    sandboxes?: Record<string, HeldSandbox> | undefined;
    template?: { sandboxes?: Record<string, TemplateSandbox> | undefined } | undefined;
    run?: { jobId?: string | undefined } | undefined;
  };
  sessionId: string;
  /** The port to an existing sandbox. */
  port: (sandboxId: string) => SandboxPort;
  provisioner: SandboxProvisioner;
  /** Commits the session's working state (before a sandbox is created: see {@link ensure}). */
  commit: () => Promise<void>;
  /** Aborted only when the turn itself must stop (destroying still happens after a cancel). */
  halt: AbortSignal;
  log: Logger;
}

/**
 * The sandboxes of one session's turn: the port to one by name (creating an owned one on its
 * first use, and marking it created in the state, which is committed with the tool's result),
 * grants to subagents, and the destruction of the owned ones at the run's end.
 */
export class SessionSandboxes {
  private readonly creating = new Map<string, Promise<HeldSandbox>>();

  constructor(private readonly o: SessionSandboxesOptions) {}

  /** The sandboxes the session holds. */
  held(): Record<string, HeldSandbox> {
    return this.o.session.sandboxes ?? {};
  }

  /**
   * The port to sandbox `name`, created first if it is owned and not yet created.
   * @throws TroupeError `INVALID_ARGUMENT` naming `field` for a name the session does not hold;
   *   the node agent's error when creating fails
   */
  async port(
    name: string = MAIN_SANDBOX,
    options: { field?: string; signal?: AbortSignal } = {},
  ): Promise<SandboxPort> {
    const h = await this.ensure(name, options);
    return this.o.port(h.id);
  }

  /**
   * Sandbox `name`, created first if it is owned and not yet created.
   * @throws TroupeError `INVALID_ARGUMENT` naming `field` for a name the session does not hold
   */
  async ensure(
    name: string,
    options: { field?: string; signal?: AbortSignal } = {},
  ): Promise<HeldSandbox> {
    const held = this.held();
    const h = Object.hasOwn(held, name) ? held[name] : undefined;
    if (!h) {
      throw invalidArgument(
        options.field ?? 'arguments.sandbox',
        `no sandbox '${name}'; yours: ${heldList(held)}`,
      );
    }
    if (!h.owned || h.ready) return h;
    let pending = this.creating.get(name);
    if (!pending) {
      pending = this.create(name, h, options.signal);
      this.creating.set(name, pending);
      pending.catch(() => this.creating.delete(name));
    }
    return pending;
  }

  private async create(name: string, h: HeldSandbox, signal?: AbortSignal): Promise<HeldSandbox> {
    const spec = this.o.session.template?.sandboxes?.[name];
    if (!spec) throw invalidArgument('template.sandboxes', `declares no sandbox '${name}'`);
    const jobId = this.o.session.run?.jobId;
    // Recorded and committed before the create is sent: whatever ends the run — this turn, or a
    // later one from the committed state (a cancel taken in its own turn, a crash) — destroys it.
    if (!h.created) {
      h.created = true;
      await this.o.commit();
    }
    await this.o.provisioner.create(h.id, spec, {
      ...(jobId !== undefined ? { jobId } : {}),
      ...(signal ? { signal } : {}),
    });
    h.ready = true;
    this.o.log.info(
      { session: this.o.sessionId, sandbox: h.id, name, image: spec.image },
      'sandbox created',
    );
    return h;
  }

  /**
   * Sandboxes `names` as a run message gives them to a subagent (created first when owned), or
   * the session's `main` (when it holds one) for `undefined`: shared, not copied.
   * @throws TroupeError `INVALID_ARGUMENT` naming `field` for a name the session does not hold
   */
  async grant(
    names: readonly string[] | undefined,
    options: { field: string; signal?: AbortSignal },
  ): Promise<Record<string, { id: string; image?: string; description?: string }>> {
    const wanted = names ?? (Object.hasOwn(this.held(), MAIN_SANDBOX) ? [MAIN_SANDBOX] : []);
    const out: Record<string, { id: string; image?: string; description?: string }> = {};
    for (const name of wanted) {
      const h = await this.ensure(name, options);
      out[name] = {
        id: h.id,
        ...(h.image !== undefined ? { image: h.image } : {}),
        ...(h.description !== undefined ? { description: h.description } : {}),
      };
    }
    return out;
  }

  /**
   * Destroys the owned sandboxes that were created (in parallel, each within the provisioner's
   * deadline). A failure is logged and left to the sandbox's idle timeout and the node agent's
   * reaper: the run ends anyway.
   */
  async destroyOwned(): Promise<void> {
    const owned = Object.entries(this.held()).filter(([, h]) => h.owned && h.created);
    await Promise.all(
      owned.map(async ([name, h]) => {
        try {
          await this.o.provisioner.destroy(h.id, { signal: this.o.halt });
          h.created = false;
          h.ready = false;
          this.o.log.info({ session: this.o.sessionId, sandbox: h.id, name }, 'sandbox destroyed');
        } catch (err) {
          this.o.log.warn(
            { err, session: this.o.sessionId, sandbox: h.id, name },
            'could not destroy a sandbox at the run end; its idle timeout or the reaper will',
          );
        }
      }),
    );
  }
}
