import {
  type ActorAddress,
  coordSubject,
  decodeErrorHeaders,
  TroupeError,
  timeoutError,
} from '@troupe/proto';
import { type NatsConnection } from '@nats-io/transport-node';
import { type JetStreamClient } from '@nats-io/jetstream';
import { type Logger } from '../logger';
import { decodeJson, encodeJson } from './json-codec';
import { isNoResponders, isNatsTimeout } from './nats-errors';
import { type ActivateReply, ActivateReplySchema } from './protocol';

/** What refs and activations share: the connection and the way to ask for an activation. */
export class Transport {
  constructor(
    readonly cluster: string,
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly log: Logger,
  ) {}

  /**
   * Asks the placement service (`coord.sched.activate`) to make `addr` live and waits until it is.
   * Throws UNAVAILABLE when no placer answers, or the placer's error.
   */
  async activate(
    addr: ActorAddress,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<ActivateReply> {
    const subject = coordSubject(this.cluster, 'sched', 'activate');
    const timeout = timeoutError(`activation of ${addr.kind}/${addr.id}`, options.timeoutMs);
    options.signal?.throwIfAborted();
    let reply;
    try {
      reply = await this.nc.request(subject, encodeJson({ addr }), { timeout: options.timeoutMs });
    } catch (err) {
      if (isNoResponders(err)) {
        throw new TroupeError(
          'UNAVAILABLE',
          `no placement service answers on ${subject}: start a coordinator, or an ActorSystem with placement 'local'`,
          { cause: err },
        );
      }
      if (isNatsTimeout(err)) throw timeout;
      throw new TroupeError('UNAVAILABLE', 'activation request failed', { cause: err });
    }
    const error = decodeErrorHeaders(reply.headers);
    if (error) throw error;
    return ActivateReplySchema.parse(decodeJson(reply.data));
  }
}
