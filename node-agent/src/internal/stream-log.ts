import { fromAbortSignal, raceSignal } from '@troupe/proto';
import { anySignal } from './abort';

/** What {@link StreamLog.read} returns: bytes from an offset, and where the next read starts. */
export interface StreamLogRead {
  /** The bytes read (whole UTF-8 characters only, unless the stream ended). */
  data: Buffer;
  /** Offset of the first byte returned (later than asked when older bytes were discarded). */
  offset: number;
  /** Offset to read from next. */
  nextOffset: number;
}

/**
 * An append-only byte stream read by offset, for a reader that follows a task's output as it
 * comes (an MCP server's stdout). Bytes older than `maxBytes` behind the newest are discarded; a
 * read that asks for them starts at the oldest byte kept (its `offset` says so).
 */
export class StreamLog {
  private chunks: Buffer[] = [];
  /** Offset of the first byte of `chunks`. */
  private base = 0;
  private size = 0;
  private ended = false;
  private wake: (() => void) | undefined;
  private waiting: Promise<void> | undefined;

  constructor(private readonly maxBytes: number) {}

  /** Offset after the last byte written. */
  get end(): number {
    return this.base + this.size;
  }

  /** Appends a chunk (copied: the caller may reuse its buffer). */
  write(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.chunks.push(Buffer.from(chunk));
    this.size += chunk.length;
    while (this.size > this.maxBytes && this.chunks.length > 1) {
      const first = this.chunks.shift() as Buffer;
      this.size -= first.length;
      this.base += first.length;
    }
    this.notify();
  }

  /** Marks the stream ended: waiting readers return at once. */
  close(): void {
    this.ended = true;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    this.waiting = undefined;
    wake?.();
  }

  /**
   * Up to `maxBytes` bytes from `from`; when none are there yet, waits up to `waitMs` for some
   * (or for the end of the stream, or `signal`). A trailing incomplete UTF-8 character is held
   * back until its last byte arrives, so every read decodes on its own.
   */
  async read(
    from: number,
    options: { waitMs: number; maxBytes: number; signal?: AbortSignal },
  ): Promise<StreamLogRead> {
    if (from >= this.end && !this.ended && options.waitMs > 0) {
      this.waiting ??= new Promise<void>((resolve) => (this.wake = resolve));
      await raceSignal(
        this.waiting,
        anySignal(options.signal, AbortSignal.timeout(options.waitMs)),
      ).catch(() => undefined);
      if (options.signal?.aborted) throw fromAbortSignal(options.signal);
    }
    const start = Math.max(from, this.base);
    const all = Buffer.concat(this.chunks);
    let data = all.subarray(start - this.base, start - this.base + options.maxBytes);
    if (!this.ended) data = data.subarray(0, completeUtf8Length(data));
    return { data: Buffer.from(data), offset: start, nextOffset: start + data.length };
  }
}

/** Length of the longest prefix of `b` that does not end inside a UTF-8 character. */
export function completeUtf8Length(b: Uint8Array): number {
  // Look back at most 3 bytes for the lead byte of the last character.
  for (let i = b.length - 1, back = 0; i >= 0 && back < 4; i--, back++) {
    const byte = b[i] as number;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return back + 1 >= need ? b.length : i;
  }
  return b.length;
}

/** Bytes of an interactive task's stdout kept for {@link StreamLog.read} (older ones dropped). */
export const INTERACTIVE_LOG_BYTES = 4 * 1024 * 1024;

/** Largest single read of an interactive task's stdout, unless the caller asks for less. */
export const MAX_OUTPUT_READ_BYTES = 256 * 1024;

/** {@link ReadOutputOptions} with their defaults. */
export function readOutputOptions(o: {
  fromOffset: number;
  waitMs?: number;
  maxBytes?: number;
  signal?: AbortSignal;
}): { fromOffset: number; waitMs: number; maxBytes: number; signal?: AbortSignal } {
  return {
    fromOffset: o.fromOffset,
    waitMs: o.waitMs ?? 0,
    maxBytes: Math.min(o.maxBytes ?? MAX_OUTPUT_READ_BYTES, MAX_OUTPUT_READ_BYTES),
    ...(o.signal ? { signal: o.signal } : {}),
  };
}
