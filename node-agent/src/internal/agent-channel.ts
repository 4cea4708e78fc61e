import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { ErrorCode, fromAbortSignal, isErrorCode, TroupeError } from '@troupe/proto';

/** The reply of the in-environment agent: `ok` plus the op's fields. */
export type AgentReply = Record<string, unknown>;

interface Pending {
  resolve: (reply: AgentReply) => void;
  reject: (err: unknown) => void;
}

/**
 * JSON lines to and from the persistent agent inside an environment (`agent.py`), over any byte
 * stream: a long-lived `docker exec` for desktops ({@link openDockerAgentChannel}), a virtio-serial
 * port for VMs. The agent serves requests in order; a request whose caller gave up is still
 * answered, and its reply dropped.
 */
export class AgentChannel {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closedWith: TroupeError | undefined;

  private constructor(
    private readonly requests: Writable,
    private readonly destroy: () => void,
  ) {}

  /**
   * Speaks to an agent whose replies arrive as lines on `replies` and whose requests go to
   * `requests`; `destroy` tears the transport down when the channel closes. The caller reports
   * the transport's end with {@link close}.
   */
  static over(requests: Writable, replies: Readable, destroy: () => void): AgentChannel {
    const channel = new AgentChannel(requests, destroy);
    createInterface({ input: replies, crlfDelay: Infinity })
      .on('line', (line) => channel.onLine(line))
      // readline re-emits the stream's errors; the transport's owner reports its end.
      .on('error', () => undefined);
    return channel;
  }

  /**
   * Speaks to an agent over a connected socket (e.g. a VM's virtio-serial port exposed as a
   * unix socket); the channel closes with `UNAVAILABLE` when the socket ends.
   */
  static overSocket(socket: Socket, what: string): AgentChannel {
    const channel = AgentChannel.over(socket, socket, () => socket.destroy());
    const onEnd = (): void =>
      channel.close(new TroupeError(ErrorCode.UNAVAILABLE, `${what}: the agent channel closed`));
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    socket.on('error', onEnd);
    return channel;
  }

  /**
   * Sends one request; resolves with the agent's reply, rejects with the agent's error (its code
   * kept) or `UNAVAILABLE` when the channel closed.
   */
  request(op: string, fields: Record<string, unknown>, signal?: AbortSignal): Promise<AgentReply> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (signal?.aborted) return Promise.reject(fromAbortSignal(signal));
    const id = this.nextId++;
    return new Promise<AgentReply>((resolve, reject) => {
      const onAbort = (): void => {
        this.pending.delete(id);
        reject(fromAbortSignal(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        resolve: (r) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(r);
        },
        reject: (e) => {
          signal?.removeEventListener('abort', onAbort);
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- pass on what was thrown
          reject(e);
        },
      });
      this.requests.write(`${JSON.stringify({ ...fields, id, op })}\n`);
    });
  }

  /** Closes the channel; pending and later requests fail with `reason`. */
  close(reason: TroupeError = new TroupeError(ErrorCode.UNAVAILABLE, 'environment closed')): void {
    if (this.closedWith) return;
    this.closedWith = reason;
    for (const p of this.pending.values()) p.reject(reason);
    this.pending.clear();
    this.destroy();
  }

  private onLine(line: string): void {
    let reply: AgentReply;
    try {
      reply = JSON.parse(line) as AgentReply;
    } catch {
      return; // not ours (a library printed to stdout)
    }
    const id = typeof reply['id'] === 'number' ? reply['id'] : -1;
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (reply['ok'] === true) {
      p.resolve(reply);
    } else {
      const code = isErrorCode(reply['code']) ? reply['code'] : ErrorCode.INTERNAL;
      p.reject(new TroupeError(code, `environment: ${String(reply['error'])}`));
    }
  }
}
