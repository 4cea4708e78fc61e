/** Output fields shared by exec results and background task statuses. */
export interface CapturedOutput {
  stdout: string;
  stderr: string;
  stdoutDroppedBytes: number;
  stderrDroppedBytes: number;
}

/** Bytes of `value` encoded as the actor runtime encodes replies (JSON, UTF-8). */
export function encodedBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '');
}

/**
 * Shrinks `stdout` and `stderr` — dropping bytes from the middle, so the head and the tail the
 * capture kept both survive, and counting them in the `…DroppedBytes` fields — until the JSON
 * reply fits in `maxBytes`. A reply larger than the NATS payload limit could not be sent at all.
 * Returns `result` itself when it already fits.
 */
export function fitOutput<T extends CapturedOutput>(result: T, maxBytes: number): T {
  let size = encodedBytes(result);
  if (size <= maxBytes) return result;
  const out = { ...result };
  for (let round = 0; round < 20 && size > maxBytes; round++) {
    const stdout = Buffer.from(out.stdout);
    const stderr = Buffer.from(out.stderr);
    const textBytes = encodedBytes(out.stdout) + encodedBytes(out.stderr);
    const excess = size - maxBytes;
    // Escaping makes JSON longer than the raw bytes; shrink the raw bytes by the same fraction,
    // with a margin, and loop in case a stream escapes worse than the other.
    const keep = Math.max(0, 1 - (excess * 1.1 + 64) / Math.max(1, textBytes));
    const [o, od] = keepEnds(stdout, Math.floor(stdout.length * keep));
    const [e, ed] = keepEnds(stderr, Math.floor(stderr.length * keep));
    out.stdout = o;
    out.stderr = e;
    out.stdoutDroppedBytes += od;
    out.stderrDroppedBytes += ed;
    size = encodedBytes(out);
    if (keep === 0) break;
  }
  return out;
}

/** The first and last halves of `keep` bytes of `buf`, and how many bytes were dropped. */
function keepEnds(buf: Buffer, keep: number): [string, number] {
  if (keep >= buf.length) return [buf.toString('utf8'), 0];
  const head = Math.ceil(keep / 2);
  const tail = keep - head;
  const kept = Buffer.concat([buf.subarray(0, head), buf.subarray(buf.length - tail)]);
  return [kept.toString('utf8'), buf.length - keep];
}
