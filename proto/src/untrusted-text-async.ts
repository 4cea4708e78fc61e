import { readFile, stat } from 'node:fs/promises';
import { throwIfAborted } from './abort';
import { invalidArgument } from './errors';
import { ParseWorkerPool } from './internal/parse-worker-pool';
import {
  parseUntrustedText,
  type ParseUntrustedTextOptions,
  UntrustedTextLimits,
} from './untrusted-text';

/** Limits of {@link parseUntrustedTextAsync}'s worker threads. */
export const UntrustedTextWorkerLimits = {
  /**
   * Documents longer than this (in characters) are parsed in a worker thread; shorter ones on
   * the caller's thread (a few milliseconds at most, cheaper than the round trip).
   */
  OFF_THREAD_MIN_CHARS: 32 * 1024,
  /** Longest parse in a worker before the document is refused. */
  TIMEOUT_MS: 15_000,
  /** Worker threads at most. */
  WORKERS: 2,
  /** Heap of one worker thread. */
  MAX_HEAP_MB: 256,
  /** Parses waiting for a worker at most. */
  MAX_QUEUED: 64,
} as const;

/** Options of {@link parseUntrustedTextAsync}. */
export interface ParseUntrustedTextAsyncOptions extends ParseUntrustedTextOptions {
  /** Ends the wait (and the parse) with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Longest parse in a worker; a document that costs more is refused `INVALID_ARGUMENT` on
   * `field`. @default 15000
   */
  timeoutMs?: number;
}

let pool: ParseWorkerPool | undefined;

function sharedPool(): ParseWorkerPool {
  pool ??= new ParseWorkerPool({
    size: UntrustedTextWorkerLimits.WORKERS,
    maxHeapMb: UntrustedTextWorkerLimits.MAX_HEAP_MB,
    maxQueued: UntrustedTextWorkerLimits.MAX_QUEUED,
  });
  return pool;
}

/**
 * {@link parseUntrustedText} without holding the caller's event loop: a document above
 * {@link UntrustedTextWorkerLimits.OFF_THREAD_MIN_CHARS} is size-checked here and parsed in a
 * worker thread of a small shared pool (started when first needed, never keeping the process
 * alive), with a deadline and a heap cap. Every failure is the same `INVALID_ARGUMENT` on
 * `field` naming the rule as from the synchronous parse (code, message and `details` survive the
 * thread boundary); a parse past its deadline or heap is refused the same way; a full queue is
 * `UNAVAILABLE` (retryable).
 */
export async function parseUntrustedTextAsync(
  text: string,
  options: ParseUntrustedTextAsyncOptions,
): Promise<unknown> {
  const { signal, timeoutMs, ...parseOptions } = options;
  throwIfAborted(signal);
  if (text.length <= UntrustedTextWorkerLimits.OFF_THREAD_MIN_CHARS) {
    return parseUntrustedText(text, parseOptions);
  }
  // The size rule is checked here, so an oversized document is never copied to a worker.
  const maxBytes = parseOptions.maxBytes ?? UntrustedTextLimits.MAX_BYTES;
  if (text.length > maxBytes || Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw invalidArgument(
      parseOptions.field,
      `must be at most ${maxBytes} bytes (got ${Buffer.byteLength(text, 'utf8')})`,
    );
  }
  return sharedPool().parse(
    text,
    parseOptions,
    timeoutMs ?? UntrustedTextWorkerLimits.TIMEOUT_MS,
    signal,
  );
}

/**
 * Reads a text file that came from a user (a task file), refusing one larger than `maxBytes` by
 * its size before reading it: `INVALID_ARGUMENT` on `field`, worded like the size rule of
 * {@link parseUntrustedText}. Errors of the file system (a missing file) are passed on as they
 * are, for the caller to name.
 */
export async function readUntrustedTextFile(
  file: string,
  options: { field: string; maxBytes: number },
): Promise<string> {
  const { size } = await stat(file);
  if (size > options.maxBytes) {
    throw invalidArgument(options.field, `must be at most ${options.maxBytes} bytes (got ${size})`);
  }
  return readFile(file, 'utf8');
}

/** Terminates the parse workers (new ones start when needed): for tests that count handles. */
export async function closeUntrustedTextWorkers(): Promise<void> {
  await pool?.close();
}
