import { TroupeClient } from '../troupe-client';
import { type CliIo } from './cli-io';
import { clientOptions, type GlobalOptions } from './connection';

/** What every command gets. */
export class CommandContext {
  private readonly clients: TroupeClient[] = [];

  constructor(
    readonly io: CliIo,
    readonly global: GlobalOptions,
    /** Aborted on Ctrl-C. */
    readonly signal: AbortSignal,
  ) {}

  /** A client of the job API the global options point at. */
  client(): TroupeClient {
    const c = new TroupeClient(clientOptions(this.global, this.io));
    this.clients.push(c);
    return c;
  }

  /** Closes the clients made. */
  close(): void {
    for (const c of this.clients.splice(0)) c.close();
  }
}
