import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, TroupeError } from '@troupe/proto';
import type { SandboxPort } from '../agent/sandbox-port';

/** Options of {@link SandboxStdioTransport}. */
export interface SandboxStdioTransportOptions {
  /** The session's sandbox; it must offer `startInteractive` and `readOutput`. */
  port: SandboxPort;
  /** The server's argv. */
  argv: readonly string[];
  /** Extra environment. */
  env?: Record<string, string>;
  /** Working directory in the sandbox. */
  cwd?: string;
  /** Longest wait of one read while an answer is due. @default 2000 */
  pollWaitMs?: number;
}

interface Outgoing {
  line: string;
  sent: () => void;
  failed: (err: unknown) => void;
}

/**
 * An MCP client transport to a stdio server running inside a sandbox, as an interactive job of
 * its `sandbox` actor: each message is one line on the job's stdin, each line of its stdout one
 * message back. The sandbox actor takes one message at a time, so the transport drives it: a
 * write travels with a read (`readOutput` with `write`), and reads continue (long-polling) only
 * while a request of ours waits for its answer — an idle server costs nothing. When the job ends
 * the transport closes, which fails every pending request (the SDK's `ConnectionClosed`).
 */
export class SandboxStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private jobId: string | undefined;
  private offset = 0;
  private partial = '';
  private readonly outbox: Outgoing[] = [];
  /** Ids of our requests that have no answer yet. */
  private readonly awaiting = new Set<string | number>();
  private pumping = false;
  private closed = false;
  private readonly stop = new AbortController();
  /** How the job ended, once it did: `exit code 1: <stderr tail>`. */
  exit: string | undefined;

  constructor(private readonly o: SandboxStdioTransportOptions) {}

  async start(): Promise<void> {
    const { port } = this.o;
    if (!port.startInteractive || !port.readOutput) {
      throw new TroupeError(
        ErrorCode.INVALID_ARGUMENT,
        'this sandbox port cannot run interactive jobs (stdio MCP servers)',
      );
    }
    this.jobId = await port.startInteractive(this.o.argv, {
      ...(this.o.env ? { env: this.o.env } : {}),
      ...(this.o.cwd !== undefined ? { cwd: this.o.cwd } : {}),
      signal: this.stop.signal,
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed || this.jobId === undefined) {
      return Promise.reject(new TroupeError(ErrorCode.UNAVAILABLE, 'MCP stdio transport closed'));
    }
    if ('method' in message && 'id' in message) this.awaiting.add(message.id);
    return new Promise<void>((sent, failed) => {
      this.outbox.push({ line: `${JSON.stringify(message)}\n`, sent, failed });
      this.pump();
    });
  }

  /** Runs reads (carrying queued writes) until nothing is queued and no answer is due. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    void this.pumpLoop().finally(() => {
      this.pumping = false;
      if (!this.closed && this.outbox.length > 0) this.pump();
    });
  }

  private async pumpLoop(): Promise<void> {
    const port = this.o.port;
    const jobId = this.jobId as string;
    while (!this.closed && (this.outbox.length > 0 || this.awaiting.size > 0)) {
      const batch = this.outbox.splice(0);
      let r;
      try {
        r = await port.readOutput!(jobId, {
          fromOffset: this.offset,
          waitMs: batch.length > 0 && this.awaiting.size === 0 ? 0 : (this.o.pollWaitMs ?? 2_000),
          ...(batch.length > 0 ? { write: batch.map((b) => b.line).join('') } : {}),
          signal: this.stop.signal,
        });
      } catch (err) {
        for (const b of batch) b.failed(err);
        if (this.stop.signal.aborted) return; // close() is under way
        this.onerror?.(err as Error);
        await this.shut(`sandbox read failed: ${(err as Error).message}`);
        return;
      }
      for (const b of batch) b.sent();
      this.offset = r.nextOffset;
      this.take(r.data);
      if (r.state !== 'running') {
        await this.shut(await this.exitText(jobId, r.state, r.exitCode));
        return;
      }
    }
  }

  /** Splits output into lines and hands each parsed message on. */
  private take(data: string): void {
    if (data.length === 0) return;
    const lines = (this.partial + data).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      let message: JSONRPCMessage;
      try {
        message = JSONRPCMessageSchema.parse(JSON.parse(line));
      } catch (err) {
        // A server that logs to stdout breaks the protocol; report it and read on.
        this.onerror?.(
          new Error(`MCP server wrote a line that is not JSON-RPC: ${line.slice(0, 200)}`, {
            cause: err,
          }),
        );
        continue;
      }
      if (!('method' in message) && 'id' in message && message.id !== undefined) {
        this.awaiting.delete(message.id);
      }
      this.onmessage?.(message);
    }
  }

  private async exitText(jobId: string, state: string, exitCode?: number): Promise<string> {
    let stderr = '';
    try {
      stderr = (await this.o.port.poll(jobId, {})).stderr.trim().slice(-500);
    } catch {
      // The exit code alone still says what happened.
    }
    const how = state === 'exited' ? 'exited' : `ended (${state})`;
    return `${how}${exitCode !== undefined ? ` with exit code ${exitCode}` : ''}${stderr ? `: ${stderr}` : ''}`;
  }

  private async shut(why: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.exit ??= why;
    for (const b of this.outbox.splice(0)) {
      b.failed(new TroupeError(ErrorCode.UNAVAILABLE, `MCP server ${why}`));
    }
    this.onclose?.();
  }

  /** Kills the server's job (if it still runs) and closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.exit ??= 'closed by the client';
    this.stop.abort();
    const jobId = this.jobId;
    if (jobId !== undefined) {
      await this.o.port.kill(jobId, {}).catch(() => undefined);
    }
    await this.shut('closed by the client');
  }
}
