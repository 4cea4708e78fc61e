import { randomUUID } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { type UntypedActorRef } from '@troupe/actors';
import { TroupeError } from '@troupe/proto';
import { z } from 'zod';

/** Where the world package goes in the sandbox (on `PYTHONPATH`). */
export const WORLD_DIR = '/workspace/world';
/** The world's database. */
export const WORLD_DB = '/workspace/state/world.db';
/** What `complete_task` writes. */
export const ANSWER_FILE = '/workspace/state/answer.json';
/** Where the grader is copied once the agent has finished (an extra volume). */
export const GRADER_DIR = '/grader';

/** Largest tree of world or grader files sent to a sandbox. */
const MAX_TREE_BYTES = 768 * 1024;

/**
 * The files under `dir` (relative path → text), skipping caches; refuses trees above 768 KiB
 * (they travel in one NATS message).
 */
export async function readTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  let total = 0;
  const walk = async (rel: string): Promise<void> => {
    for (const e of await readdir(path.join(dir, rel), { withFileTypes: true })) {
      if (e.name === '__pycache__' || e.name.startsWith('.')) continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(r);
      else if (e.isFile()) {
        total += (await stat(path.join(dir, r))).size;
        if (total > MAX_TREE_BYTES) {
          throw new TroupeError(
            'INVALID_ARGUMENT',
            `${dir} holds more than ${MAX_TREE_BYTES} bytes`,
          );
        }
        out[r] = await readFile(path.join(dir, r), 'utf8');
      }
    }
  };
  await walk('');
  return out;
}

const ExecReplySchema = z
  .object({ exitCode: z.number(), stdout: z.string(), stderr: z.string(), timedOut: z.boolean() })
  .loose();
const StartReplySchema = z.object({ taskId: z.string() }).loose();
const OutputReplySchema = z
  .object({
    data: z.string(),
    nextOffset: z.number(),
    state: z.string(),
    exitCode: z.number().optional(),
  })
  .loose();

/** What `init` printed. */
export interface WorldInit {
  supervisor: { name?: string; email?: string } & Record<string, unknown>;
}

/** The REPL's reply to `exec` (contract §2.2). */
export const ExecOutcomeSchema = z
  .object({
    id: z.number().nullable(),
    ok: z.boolean(),
    output: z.string().default(''),
    error: z.string().nullable().default(null),
    completed: z.boolean().default(false),
    answer: z.unknown().optional(),
  })
  .loose();
/** The REPL's reply to `exec`. */
export type ExecOutcome = z.output<typeof ExecOutcomeSchema>;

/** The REPL's reply to `check_skill`. */
export const CheckOutcomeSchema = z
  .object({
    id: z.number().nullable(),
    ok: z.boolean(),
    reason: z.string().nullable().default(null),
  })
  .loose();

/** The grader's verdict (contract §2.4). */
export const GradeSchema = z
  .object({
    passed: z.boolean(),
    reason: z.string().default(''),
    checks: z
      .array(
        z.object({ name: z.string(), passed: z.boolean(), detail: z.string().default('') }).loose(),
      )
      .default([]),
  })
  .loose();
/** The grader's verdict. */
export type Grade = z.output<typeof GradeSchema>;

/** Options of {@link WorldSandbox.create}. */
export interface WorldSandboxOptions {
  image: string;
  memoryMb: number;
  jobId: string;
  /** The world package's files (relative to `world/`). */
  world: Record<string, string>;
  signal: AbortSignal;
  /** Deadline of creating the sandbox (a missing image is built). @default 300000 */
  createTimeoutMs?: number;
}

/**
 * One task's world: a sandbox (no network, uid 1000, read-only root) holding the world package,
 * a seeded database and the long-lived REPL (an interactive background job of the node agent's
 * `sandbox` actor: one JSON line in, one JSON line out).
 */
export class WorldSandbox {
  private replTask: string | undefined;
  private offset = 0;
  private pending = '';
  private nextId = 1;

  private constructor(
    private readonly sb: UntypedActorRef,
    private readonly signal: AbortSignal,
  ) {}

  /** Creates the sandbox with the world copied in (idempotent for the same id and spec). */
  static async create(sb: UntypedActorRef, o: WorldSandboxOptions): Promise<WorldSandbox> {
    const files: Record<string, string> = {};
    for (const [rel, text] of Object.entries(o.world)) files[`world/${rel}`] = text;
    await sb.ask(
      'create',
      {
        spec: {
          image: o.image,
          memoryMb: o.memoryMb,
          cpus: 1,
          network: 'none',
          env: { PYTHONPATH: WORLD_DIR, PYTHONDONTWRITEBYTECODE: '1' },
          volumes: [GRADER_DIR],
          files,
        },
        jobId: o.jobId,
      },
      { timeoutMs: o.createTimeoutMs ?? 300_000, signal: o.signal },
    );
    return new WorldSandbox(sb, o.signal);
  }

  private async exec(cmd: string[], timeoutMs = 60_000): Promise<z.output<typeof ExecReplySchema>> {
    return ExecReplySchema.parse(
      await this.sb.ask(
        'exec',
        { cmd, timeoutMs, cwd: '/workspace' },
        { timeoutMs: timeoutMs + 30_000, signal: this.signal },
      ),
    );
  }

  /** Seeds a fresh world (`appworld_lite.init`). */
  async init(seed: number): Promise<WorldInit> {
    const r = await this.exec([
      'python3',
      '-m',
      'appworld_lite.init',
      '--db',
      WORLD_DB,
      '--seed',
      String(seed),
    ]);
    const line = r.stdout.trim().split('\n').at(-1) ?? '';
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      parsed = undefined;
    }
    const ok = z
      .object({ ok: z.literal(true), supervisor: z.record(z.string(), z.unknown()) })
      .loose()
      .safeParse(parsed);
    if (r.exitCode !== 0 || !ok.success) {
      throw new TroupeError(
        'INTERNAL',
        `world init (seed ${seed}) failed: exit ${r.exitCode}: ${(r.stderr || r.stdout).slice(-800)}`,
      );
    }
    return { supervisor: ok.data.supervisor };
  }

  /** Starts the REPL on the seeded world. */
  async startRepl(): Promise<void> {
    const r = StartReplySchema.parse(
      await this.sb.ask(
        'startBackground',
        {
          cmd: ['python3', '-u', '-m', 'appworld_lite.repl', '--db', WORLD_DB],
          cwd: '/workspace',
          interactive: true,
        },
        { timeoutMs: 30_000, signal: this.signal },
      ),
    );
    this.replTask = r.taskId;
    this.offset = 0;
    this.pending = '';
  }

  /** Sends one request and waits (up to `timeoutMs`) for the REPL's line with the same id. */
  private async request(op: Record<string, unknown>, timeoutMs: number): Promise<unknown> {
    const task = this.replTask;
    if (task === undefined) throw new TroupeError('INTERNAL', 'the REPL is not running');
    const id = this.nextId++;
    let write: string | undefined = `${JSON.stringify({ ...op, id })}\n`;
    const until = Date.now() + timeoutMs;
    for (;;) {
      const r = OutputReplySchema.parse(
        await this.sb.ask(
          'readOutput',
          {
            taskId: task,
            fromOffset: this.offset,
            waitMs: 5_000,
            ...(write !== undefined ? { write } : {}),
          },
          { timeoutMs: 40_000, signal: this.signal },
        ),
      );
      write = undefined;
      this.offset = r.nextOffset;
      this.pending += r.data;
      let nl: number;
      while ((nl = this.pending.indexOf('\n')) >= 0) {
        const line = this.pending.slice(0, nl).trim();
        this.pending = this.pending.slice(nl + 1);
        if (!line) continue;
        let msg: unknown;
        try {
          msg = JSON.parse(line);
        } catch {
          throw new TroupeError(
            'INTERNAL',
            `the REPL wrote a line that is not JSON: ${line.slice(0, 300)}`,
          );
        }
        const got = (msg as { id?: unknown }).id;
        if (got === id) return msg;
        if (got === null) {
          throw new TroupeError('INTERNAL', `the REPL refused a request: ${line.slice(0, 300)}`);
        }
      }
      if (r.state !== 'running') {
        throw new TroupeError(
          'UNAVAILABLE',
          `the REPL ended (${r.state}${r.exitCode !== undefined ? `, exit ${r.exitCode}` : ''})`,
        );
      }
      if (Date.now() > until) {
        throw new TroupeError(
          'TIMEOUT',
          `the REPL did not answer request ${id} in ${timeoutMs} ms`,
        );
      }
    }
  }

  /** Runs one action in the REPL's persistent namespace. */
  async execCode(code: string, timeoutS: number): Promise<ExecOutcome> {
    return ExecOutcomeSchema.parse(
      await this.request({ op: 'exec', code, timeoutS }, timeoutS * 1_000 + 30_000),
    );
  }

  /** Defines a skill in the live namespace and checks it against this world (contract §2.2). */
  async checkSkill(name: string, source: string): Promise<{ ok: boolean; reason: string | null }> {
    const r = CheckOutcomeSchema.parse(
      await this.request({ op: 'check_skill', name, source }, 60_000),
    );
    return { ok: r.ok, reason: r.reason };
  }

  /** Stops the REPL (before the grader is copied in). */
  async stopRepl(): Promise<void> {
    const task = this.replTask;
    this.replTask = undefined;
    if (task === undefined) return;
    await this.sb
      .ask('kill', { taskId: task }, { timeoutMs: 30_000, signal: this.signal })
      .catch(() => undefined);
  }

  /**
   * Grades the world: copies the grader in (only now, after the agent), with a pristine copy of
   * the world package beside it, into a fresh directory under {@link GRADER_DIR} the agent could
   * not know, and runs `evaluate.py` in Python's isolated mode (`-I`: no PYTHONPATH, no script
   * directory, no user site), so nothing the agent planted in `/workspace` is imported. A grader
   * that exits non-zero or prints no verdict is an error.
   */
  async grade(
    grader: Record<string, string>,
    world: Record<string, string>,
    taskId: string,
    seed: number,
  ): Promise<Grade> {
    await this.stopRepl();
    const dir = `${GRADER_DIR}/g-${randomUUID()}`;
    const files: Record<string, string> = { ...grader };
    for (const [rel, text] of Object.entries(world)) files[`world/${rel}`] = text;
    await this.sb.ask(
      'putFiles',
      { destDir: dir, files, owner: 'root' },
      { timeoutMs: 60_000, signal: this.signal },
    );
    const r = await this.exec(
      [
        'python3',
        '-I',
        `${dir}/evaluate.py`,
        '--world',
        `${dir}/world`,
        '--db',
        WORLD_DB,
        '--answer',
        ANSWER_FILE,
        '--task',
        taskId,
        '--seed',
        String(seed),
      ],
      120_000,
    );
    const line = r.stdout.trim().split('\n').at(-1) ?? '';
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      parsed = undefined;
    }
    const g = GradeSchema.safeParse(parsed);
    if (r.exitCode !== 0 || !g.success) {
      throw new TroupeError(
        'INTERNAL',
        `the grader of ${taskId} failed: exit ${r.exitCode}: ${(r.stderr || r.stdout).slice(-800)}`,
      );
    }
    return g.data;
  }
}
