import type { Duplex } from 'node:stream';
import { PassThrough } from 'node:stream';
import { createInterface } from 'node:readline';
import { ErrorCode, fromAbortSignal, isErrorCode, TroupeError } from '@troupe/proto';
import type Docker from 'dockerode';
import { dockerError } from './docker-errors';

/** The reply of the in-environment agent: `ok` plus the op's fields. */
export type AgentReply = Record<string, unknown>;

interface Pending {
  resolve: (reply: AgentReply) => void;
  reject: (err: unknown) => void;
}

/**
 * JSON lines to and from the persistent agent inside an environment, over one long-lived
 * `docker exec` (stdin/stdout). The agent serves requests in order; a request whose caller gave
 * up is still answered, and its reply dropped.
 */
export class AgentChannel {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closedWith: TroupeError | undefined;
  private stderrTail = '';

  private constructor(private readonly stream: Duplex) {}

  /** Starts `cmd` in `container` and connects to it. */
  static async open(
    docker: Docker,
    container: Docker.Container,
    cmd: string[],
    user: string,
  ): Promise<AgentChannel> {
    let stream: Duplex;
    try {
      const exec = await container.exec({
        Cmd: cmd,
        User: user,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      });
      stream = await exec.start({ hijack: true, stdin: true });
    } catch (err) {
      throw dockerError('start the environment agent', err);
    }
    const channel = new AgentChannel(stream);
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    docker.modem.demuxStream(stream, stdout, stderr);
    stderr.on('data', (b: Buffer) => {
      channel.stderrTail = (channel.stderrTail + b.toString('utf8')).slice(-2_000);
    });
    createInterface({ input: stdout, crlfDelay: Infinity }).on('line', (line) =>
      channel.onLine(line),
    );
    const onEnd = (): void => {
      stdout.end();
      channel.close(
        new TroupeError(
          ErrorCode.UNAVAILABLE,
          `the environment agent exited${channel.stderrTail ? `: ${channel.stderrTail.trim()}` : ''}`,
        ),
      );
    };
    stream.once('end', onEnd);
    stream.once('close', onEnd);
    stream.on('error', onEnd);
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
      this.stream.write(`${JSON.stringify({ ...fields, id, op })}\n`);
    });
  }

  /** Closes the channel; pending and later requests fail with `reason`. */
  close(reason: TroupeError = new TroupeError(ErrorCode.UNAVAILABLE, 'environment closed')): void {
    if (this.closedWith) return;
    this.closedWith = reason;
    for (const p of this.pending.values()) p.reject(reason);
    this.pending.clear();
    this.stream.destroy();
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
