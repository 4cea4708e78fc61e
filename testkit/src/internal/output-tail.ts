/** Keeps the last `maxChars` characters written to it, for error messages about child processes. */
export class OutputTail {
  private text = '';

  constructor(private readonly maxChars = 8192) {}

  /** Appends a chunk of output. */
  push(chunk: Buffer | string): void {
    this.text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    if (this.text.length > this.maxChars * 2) this.text = this.text.slice(-this.maxChars);
  }

  /** The retained tail. */
  toString(): string {
    return this.text.length > this.maxChars ? this.text.slice(-this.maxChars) : this.text;
  }

  /** Forgets everything retained so far (a restarted process starts a fresh tail). */
  clear(): void {
    this.text = '';
  }
}
