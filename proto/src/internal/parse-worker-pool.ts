import { existsSync } from 'node:fs';
import path from 'node:path';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { fromAbortSignal, invalidArgument, TroupeError } from '../errors';
import type { ParseUntrustedTextOptions } from '../untrusted-text';
import type { ParseReply, ParseRequest } from './parse-worker';

/** Options of a {@link ParseWorkerPool}. */
export interface ParseWorkerPoolOptions {
  /** Most worker threads at once (each started when first needed). */
  size: number;
  /** Heap of one worker: a document whose parse needs more is refused. */
  maxHeapMb: number;
  /** Most parses waiting for a worker; more are refused `UNAVAILABLE` (retryable). */
  maxQueued: number;
}

/** One parse, from submission to its answer. */
interface Job {
  text: string;
  options: ParseUntrustedTextOptions;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  onAbort?: () => void;
}

/** A worker thread and the job it is parsing. */
interface Slot {
  worker: Worker;
  job?: Job & { id: number; timer: NodeJS.Timeout };
}

/**
 * How to start a parse worker. From the built package the worker is the compiled
 * `parse-worker.js` next to this file. From TypeScript sources (jest with @swc/jest, which only
 * transforms the main thread's modules) there is no `.js`: the worker then registers a require
 * hook that compiles `.ts` files with `@swc/core` (a dev dependency of the workspace) and loads
 * `parse-worker.ts`, so tests exercise the sources they see, never a stale build.
 */
export function parseWorkerEntry(): { entry: string; options: WorkerOptions } {
  const js = path.join(__dirname, 'parse-worker.js');
  if (existsSync(js)) return { entry: js, options: {} };
  const ts = path.join(__dirname, 'parse-worker.ts');
  if (!existsSync(ts)) {
    throw new TroupeError('INTERNAL', `the parse worker is missing (neither ${js} nor ${ts})`);
  }
  const swc = require.resolve('@swc/core', { paths: [__dirname] });
  const code = [
    "const fs = require('node:fs');",
    `const { transformSync } = require(${JSON.stringify(swc)});`,
    "require.extensions['.ts'] = (module, filename) => {",
    '  const out = transformSync(fs.readFileSync(filename, "utf8"), {',
    '    filename,',
    "    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },",
    "    module: { type: 'commonjs' },",
    '  });',
    '  module._compile(out.code, filename);',
    '};',
    `require(${JSON.stringify(ts)});`,
  ].join('\n');
  return { entry: code, options: { eval: true } };
}

/**
 * A small pool of worker threads that run {@link parseUntrustedText}, so a large untrusted
 * document never holds the caller's event loop: workers start when first needed and are unref'd
 * while idle (they never keep a process alive). A parse past its deadline, or needing more than
 * the worker's heap, terminates its worker (a new one starts for the next parse) and is refused
 * `INVALID_ARGUMENT` on the document's field; an aborted signal ends the wait (and the parse)
 * with the signal's reason. Errors of the parse come back as the same `TroupeError`: code,
 * message and details (`field`, `rule`).
 */
export class ParseWorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;

  constructor(private readonly config: ParseWorkerPoolOptions) {}

  /** Parses `text` in a worker. */
  parse(
    text: string,
    options: ParseUntrustedTextOptions,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    if (signal?.aborted) return Promise.reject(fromAbortSignal(signal));
    if (this.queue.length >= this.config.maxQueued) {
      return Promise.reject(
        new TroupeError(
          'UNAVAILABLE',
          `too many documents are being parsed (${this.queue.length} waiting): try again`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const job: Job = { text, options, timeoutMs, signal, resolve, reject };
      if (signal) {
        job.onAbort = () => this.abort(job);
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queue.push(job);
      this.pump();
    });
  }

  /** Terminates every worker (the pool starts new ones when asked again); for tests. */
  async close(): Promise<void> {
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  /** How many worker threads are running (for tests). */
  get workers(): number {
    return this.slots.length;
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => s.job === undefined);
      if (!slot) {
        if (this.slots.length >= this.config.size) return;
        slot = this.start();
      }
      this.dispatch(slot, this.queue.shift()!);
    }
  }

  private start(): Slot {
    const { entry, options } = parseWorkerEntry();
    const worker = new Worker(entry, {
      ...options,
      resourceLimits: { maxOldGenerationSizeMb: this.config.maxHeapMb },
    });
    const slot: Slot = { worker };
    worker.unref();
    worker.on('message', (reply: ParseReply) => this.answer(slot, reply));
    // An uncaught error in the worker (out of memory) or its exit ends its job and the slot.
    worker.on('error', (err: Error & { code?: string }) => this.lose(slot, err));
    worker.on('exit', (code) => this.lose(slot, new Error(`parse worker exited (${code})`)));
    this.slots.push(slot);
    return slot;
  }

  private dispatch(slot: Slot, job: Job): void {
    const id = this.nextId++;
    const timer = setTimeout(() => {
      this.retire(slot);
      this.finish(
        job,
        invalidArgument(
          job.options.field,
          `must parse within ${job.timeoutMs} ms (a document that costs more is refused)`,
        ),
      );
    }, job.timeoutMs);
    slot.job = { ...job, id, timer };
    slot.worker.ref();
    slot.worker.postMessage({ id, text: job.text, options: job.options } satisfies ParseRequest);
  }

  private answer(slot: Slot, reply: ParseReply): void {
    const job = slot.job;
    if (!job || job.id !== reply.id) return;
    clearTimeout(job.timer);
    slot.job = undefined;
    slot.worker.unref();
    if (reply.ok) this.finish(job, undefined, reply.value);
    else {
      const { code, message, details } = reply.error;
      this.finish(
        job,
        new TroupeError(code as TroupeError['code'], message, details ? { details } : {}),
      );
    }
    this.pump();
  }

  /** A worker failed or exited: its job ends with the reason, and the slot is freed. */
  private lose(slot: Slot, err: Error & { code?: string }): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    const job = slot.job;
    slot.job = undefined;
    if (job) {
      clearTimeout(job.timer);
      this.finish(
        job,
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? invalidArgument(
              job.options.field,
              `must parse within ${this.config.maxHeapMb} MB of memory (a document that needs more is refused)`,
            )
          : new TroupeError('INTERNAL', `the parse worker failed: ${err.message}`, { cause: err }),
      );
    }
    this.pump();
  }

  /** Stops a worker whose job is being given up (its parse cannot be interrupted otherwise). */
  private retire(slot: Slot): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    const job = slot.job;
    if (job) clearTimeout(job.timer);
    slot.job = undefined;
    void slot.worker.terminate();
    // The slot is free for a new worker.
    queueMicrotask(() => this.pump());
  }

  private abort(job: Job): void {
    const queued = this.queue.indexOf(job);
    if (queued >= 0) this.queue.splice(queued, 1);
    else {
      const slot = this.slots.find((s) => s.job?.resolve === job.resolve);
      if (slot) this.retire(slot);
    }
    this.finish(job, fromAbortSignal(job.signal!));
  }

  private finish(job: Job, err: unknown, value?: unknown): void {
    if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
    if (err !== undefined) job.reject(err);
    else job.resolve(value);
  }
}
