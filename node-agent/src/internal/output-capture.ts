/**
 * Keeps the first and the last bytes of a stream within a fixed budget and counts what falls in
 * between, so a command that prints gigabytes costs a bounded amount of memory and its beginning
 * (the command's banner, the first error) and its end (the summary) both survive.
 */
export class OutputCapture {
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;

  constructor(maxBytes: number) {
    const max = Math.max(0, Math.floor(maxBytes));
    this.headLimit = Math.ceil(max / 2);
    this.tailLimit = max - this.headLimit;
  }

  /** Adds a chunk (copied: the caller may reuse its buffer, and a slice would pin a big one). */
  write(chunk: Uint8Array): void {
    let buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    this.total += buf.length;
    if (this.headBytes < this.headLimit) {
      const take = Math.min(buf.length, this.headLimit - this.headBytes);
      this.head.push(Buffer.from(buf.subarray(0, take)));
      this.headBytes += take;
      buf = buf.subarray(take);
    }
    if (buf.length === 0 || this.tailLimit === 0) return;
    if (buf.length >= this.tailLimit) {
      this.tail = [Buffer.from(buf.subarray(buf.length - this.tailLimit))];
      this.tailBytes = this.tailLimit;
      return;
    }
    this.tail.push(Buffer.from(buf));
    this.tailBytes += buf.length;
    while (this.tailBytes > this.tailLimit) {
      const first = this.tail[0] as Buffer;
      const excess = this.tailBytes - this.tailLimit;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
      }
    }
  }

  /** Every byte written so far. */
  get totalBytes(): number {
    return this.total;
  }

  /** Bytes dropped between the head and the tail. */
  get droppedBytes(): number {
    return this.total - this.headBytes - this.tailBytes;
  }

  /** Head and tail, concatenated. */
  bytes(): Buffer {
    return Buffer.concat([...this.head, ...this.tail]);
  }

  /** Head and tail decoded as UTF-8 (a character cut at the seam becomes U+FFFD). */
  text(): string {
    return this.bytes().toString('utf8');
  }

  /** The last `maxBytes` bytes kept, decoded as UTF-8. */
  tailText(maxBytes: number): string {
    const all = this.bytes();
    return all.subarray(Math.max(0, all.length - maxBytes)).toString('utf8');
  }
}
