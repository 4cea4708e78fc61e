import { TroupeError } from '@troupe/proto';
import { type StoredMsg } from '@nats-io/jetstream';
import { DirectMsgImpl, JetStreamStatus } from '@nats-io/jetstream/internal';
import { NO_RESPONDERS, type Requester } from './requester';

/** Deadline of one direct get (nats.js' JetStream API default). */
export const DIRECT_GET_TIMEOUT_MS = 5_000;

/**
 * The first message on `subject` at or after sequence `seq` of `stream` (a JetStream direct get,
 * `next_by_subj`), or null when there is none. What `jsm.direct.getMessage` does, through the
 * {@link Requester} rather than nats.js' `request()`, which allocates an `Error` for every request
 * it completes: an actor's inbox is read this way once per posted message, and in a profile of a
 * burst of posts those errors were a tenth of the CPU.
 */
export async function directGetNext(
  requester: Requester,
  stream: string,
  subject: string,
  seq: number,
): Promise<StoredMsg | null> {
  const reply = await requester.request(
    `$JS.API.DIRECT.GET.${stream}`,
    Buffer.from(JSON.stringify({ seq, next_by_subj: subject })),
    { timeoutMs: DIRECT_GET_TIMEOUT_MS },
  );
  if (reply === NO_RESPONDERS) {
    throw new TroupeError('UNAVAILABLE', `direct get on ${stream}: JetStream did not answer`, {
      retryable: true,
    });
  }
  const code = reply.headers?.code ?? 0;
  if (code !== 0) {
    const status = new JetStreamStatus(reply);
    if (status.isMessageNotFound()) return null;
    throw status.toError();
  }
  return new DirectMsgImpl(reply);
}
