import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { ErrorCode, fromAbortSignal, TroupeError } from '@troupe/proto';

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * A QEMU Machine Protocol client over a unix socket: JSON commands, one reply each (matched by
 * `id`); asynchronous events are ignored. {@link hmp} runs a human-monitor command (`savevm`,
 * `loadvm`, `info snapshots`) and turns its text into an error when QEMU reports one.
 */
export class QmpClient {
  private nextId = 1;
  private readonly pending = new Map<string, Pending>();
  private closedWith: TroupeError | undefined;

  private constructor(private readonly socket: Socket) {}

  /**
   * Reads the greeting on a connected monitor socket and enters command mode.
   * @throws TroupeError `UNAVAILABLE` when the monitor closes first
   */
  static async attach(socket: Socket, signal?: AbortSignal): Promise<QmpClient> {
    const client = new QmpClient(socket);
    let greeted: () => void = () => undefined;
    const greeting = new Promise<void>((resolve) => (greeted = resolve));
    createInterface({ input: socket, crlfDelay: Infinity })
      .on('line', (line) => {
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        if ('QMP' in msg) greeted();
        else client.onMessage(msg);
      })
      // readline re-emits the socket's errors; 'close' ends the client.
      .on('error', () => undefined);
    const onEnd = (): void =>
      client.close(new TroupeError(ErrorCode.UNAVAILABLE, 'QMP: the monitor connection closed'));
    socket.once('close', onEnd);
    socket.on('error', onEnd);
    await Promise.race([
      greeting,
      new Promise((_, reject) =>
        socket.once('close', () =>
          reject(
            client.closedWith ??
              new TroupeError(ErrorCode.UNAVAILABLE, 'QMP: closed before its greeting'),
          ),
        ),
      ),
    ]);
    await client.execute('qmp_capabilities', undefined, signal);
    return client;
  }

  /** Runs one QMP command; resolves with its `return`, rejects with its `error`. */
  execute(command: string, args?: Record<string, unknown>, signal?: AbortSignal): Promise<unknown> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (signal?.aborted) return Promise.reject(fromAbortSignal(signal));
    const id = `q${this.nextId++}`;
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.pending.delete(id);
        reject(fromAbortSignal(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        resolve: (v) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(v);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- pass on what was thrown
          reject(e);
        },
      });
      this.socket.write(
        `${JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}), id })}\n`,
      );
    });
  }

  /**
   * Runs a human-monitor command and returns its text output.
   * @throws TroupeError `INTERNAL` when the output reports an error (`Error: …`)
   */
  async hmp(commandLine: string, signal?: AbortSignal): Promise<string> {
    const out = await this.execute(
      'human-monitor-command',
      { 'command-line': commandLine },
      signal,
    );
    const text = typeof out === 'string' ? out : '';
    if (/^(Error|error):/m.test(text) || /\bdoes not exist\b|\bnot found\b/i.test(text)) {
      throw new TroupeError(
        ErrorCode.INTERNAL,
        `QEMU ${commandLine.split(' ')[0]}: ${text.trim()}`,
      );
    }
    return text;
  }

  /** Closes the connection; pending and later commands fail with `reason`. */
  close(reason = new TroupeError(ErrorCode.UNAVAILABLE, 'QMP: closed')): void {
    if (this.closedWith) return;
    this.closedWith = reason;
    for (const p of this.pending.values()) p.reject(reason);
    this.pending.clear();
    this.socket.destroy();
  }

  private onMessage(msg: Record<string, unknown>): void {
    if (typeof msg['id'] !== 'string') return; // an event
    const p = this.pending.get(msg['id']);
    if (!p) return;
    this.pending.delete(msg['id']);
    if ('error' in msg) {
      const e = msg['error'] as { class?: string; desc?: string };
      p.reject(new TroupeError(ErrorCode.INTERNAL, `QMP: ${e.class ?? 'Error'}: ${e.desc ?? ''}`));
    } else {
      p.resolve(msg['return']);
    }
  }
}
