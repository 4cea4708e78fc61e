import {
  type ActorAddress,
  deadLetterSubject,
  encodeErrorHeaders,
  Header,
  type TroupeError,
} from '@troupe/proto';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { type JetStreamClient } from '@nats-io/jetstream';
import { type StoredInboxMessage } from './inbox-reader';

/**
 * Appends a posted message the activation gave up on to the dead-letter stream
 * (`troupe.<c>.dlq.<kind>.<id>`): its payload and headers as posted, plus its error (the wire
 * error headers), how many attempts it had and its inbox sequence. Deduplicated by that sequence,
 * so a retry after a failed commit appends nothing twice.
 */
export async function deadLetter(
  js: JetStreamClient,
  cluster: string,
  addr: ActorAddress,
  stored: StoredInboxMessage,
  error: TroupeError,
  attempts: number,
): Promise<void> {
  const h = natsHeaders();
  for (const [k, v] of stored.header ?? []) for (const value of v) h.append(k, value);
  encodeErrorHeaders(error, h);
  h.set(Header.ATTEMPT, String(attempts));
  h.set(Header.ORIGINAL_SEQ, String(stored.seq));
  await js.publish(deadLetterSubject(cluster, addr), stored.data, {
    headers: h,
    msgID: `dlq-${stored.seq}`,
  });
}
