/**
 * Thrown when a service binary the testkit needs (`nats-server`, `dockerd`) is not installed or
 * cannot be used. The message says how to install it.
 */
export class MissingBinaryError extends Error {
  /** The binary that was looked for, as given (a name searched on PATH, or a path). */
  readonly binary: string;
  /** The shell command that installs the binary on Debian/Ubuntu. */
  readonly installCommand: string;

  /**
   * @param binary - The binary looked for.
   * @param installCommand - How to install it, quoted in the message.
   * @param detail - What went wrong, the start of the message.
   */
  constructor(binary: string, installCommand: string, detail: string) {
    super(
      `${detail}. Install it with \`${installCommand}\` (Debian/Ubuntu), ` +
        'or run `scripts/setup` as root from the repository root.',
    );
    this.name = 'MissingBinaryError';
    this.binary = binary;
    this.installCommand = installCommand;
  }
}
