import { ErrorReason, TroupeError } from '@troupe/proto';
import {
  type JetStreamManager,
  JetStreamApiError,
  type MsgRequest,
  type StoredMsg,
} from '@nats-io/jetstream';
import { type ApiError, DirectMsgImpl, JetStreamStatus } from '@nats-io/jetstream/internal';
import { type MsgHdrs } from '@nats-io/transport-node';
import { decodeJson } from './json-codec';
import { NO_RESPONDERS, type Requester } from './requester';

/** Deadline of one direct get (nats.js' JetStream API default). */
export const DIRECT_GET_TIMEOUT_MS = 5_000;

/**
 * How long a direct get waits for its answer before it is asked again (within
 * {@link DIRECT_GET_TIMEOUT_MS}). A replica answers in milliseconds; a read sent while the stream
 * had no leader (a NATS server restarting) is never answered, and waiting out the whole deadline
 * held every actor's inbox for 4 s after the stream was led again (chaos run 21, seed 9122). As
 * `STREAM_LOOKUP_TIMEOUT_MS` for bucket look-ups (buckets.ts).
 */
export const DIRECT_GET_RESEND_MS = 1_500;

/**
 * The first message on `subject` at or after sequence `seq` of `stream` (a JetStream direct get,
 * `next_by_subj`), or null when there is none. What `jsm.direct.getMessage` does, through the
 * {@link Requester} rather than nats.js' `request()`, which allocates an `Error` for every request
 * it completes: an actor's inbox is read this way once per posted message, and in a profile of a
 * burst of posts those errors were a tenth of the CPU.
 */
export function directGetNext(
  requester: Requester,
  stream: string,
  subject: string,
  seq: number,
): Promise<StoredMsg | null> {
  return directGet(
    requester,
    `$JS.API.DIRECT.GET.${stream}`,
    Buffer.from(JSON.stringify({ seq, next_by_subj: subject })),
    {
      timeoutMs: DIRECT_GET_TIMEOUT_MS,
      noAnswer: () =>
        new TroupeError('UNAVAILABLE', `direct get on ${stream}: JetStream did not answer`, {
          retryable: true,
        }),
    },
  );
}

/**
 * One JetStream direct get on `apiSubject` (`$JS.API.DIRECT.GET.<stream>`, or with the subject
 * appended for a `last_by_subj` read) through the {@link Requester}: the message, or null when the
 * stream has none. Asked again at once after a reconnect and every {@link DIRECT_GET_RESEND_MS}
 * without an answer: a read lost with its server, or sent while the stream had no leader, is
 * never answered, and one answered twice does no harm. Nobody answering rejects with
 * `noAnswer()`, an error status with the nats.js error, no answer in `timeoutMs` with the nats.js
 * `TimeoutError`.
 */
export async function directGet(
  requester: Requester,
  apiSubject: string,
  payload: Uint8Array,
  options: { timeoutMs: number; noAnswer: () => Error },
): Promise<DirectMsgImpl | null> {
  const reply = await requester.request(apiSubject, payload, {
    timeoutMs: options.timeoutMs,
    resendOnReconnect: true,
    resendEveryMs: DIRECT_GET_RESEND_MS,
  });
  if (reply === NO_RESPONDERS) throw options.noAnswer();
  if ((reply.headers?.code ?? 0) !== 0) {
    const status = new JetStreamStatus(reply);
    if (status.isMessageNotFound()) return null;
    throw status.toError();
  }
  return new DirectMsgImpl(reply);
}

/**
 * The first message on `subject` at or after sequence `seq` of `stream`, read from the stream's
 * leader (`$JS.API.STREAM.MSG.GET`), or null when there is none. Unlike a direct get, which any
 * replica answers, never from a replica that lags behind (one catching up after its server
 * restarted answers with what it had for seconds).
 */
export function leaderGetNext(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  seq: number,
): Promise<StoredMsg | null> {
  // The server's MSG.GET takes `next_by_subj` (2.9+); nats.js types it for direct gets only.
  return jsm.streams.getMessage(stream, { next_by_subj: subject, seq } as unknown as MsgRequest);
}

/**
 * The value of `key` in KV bucket `bucket` as the bucket stream's leader has it
 * (`$JS.API.STREAM.MSG.GET`, `last_by_subj`); undefined when the key has no value (never
 * written, deleted or purged). A KV `get` is a direct get that any replica answers, and a replica
 * catching up after its server restarted answers "no such key" for a key written seconds before
 * (chaos seed 8007: a watch of a job just submitted failed `NOT_FOUND`): read a miss that matters
 * again with this.
 */
export async function kvValueFromLeader(
  jsm: JetStreamManager,
  bucket: string,
  key: string,
): Promise<{ value: Uint8Array; revision: number } | undefined> {
  const e = await kvEntryFromLeader(jsm, bucket, key);
  return e?.value ? { value: e.value, revision: e.revision } : undefined;
}

/**
 * The last entry of `key` in KV bucket `bucket` as the bucket stream's leader has it: its
 * revision, and its value unless it is a delete or purge marker; undefined when the key was never
 * written. What a compare-and-set on the key needs (see {@link kvValueFromLeader}).
 */
export async function kvEntryFromLeader(
  jsm: JetStreamManager,
  bucket: string,
  key: string,
): Promise<{ value?: Uint8Array; revision: number } | undefined> {
  const m = await jsm.streams.getMessage(`KV_${bucket}`, {
    last_by_subj: `$KV.${bucket}.${key}`,
  });
  if (!m) return undefined;
  const op = m.header?.get('KV-Operation');
  if (op === 'DEL' || op === 'PURGE') return { revision: m.seq };
  return { value: m.data, revision: m.seq };
}

/** What a stream's acknowledgement of a publish says. */
export interface StreamAck {
  stream: string;
  seq: number;
  duplicate: boolean;
}

/**
 * Publishes `data` to a stream's `subject` and waits for the stream's acknowledgement: what
 * `js.publish` does (one attempt, by default the JetStream API's 5 s deadline), through the
 * {@link Requester} for the same reason as {@link directGetNext}. A refusal rejects with the
 * stream's error as nats.js gives it (a `JetStreamApiError`: "wrong last sequence" is its code
 * 10071); no stream answering rejects with `UNAVAILABLE` (reason `STORE_UNAVAILABLE`); no answer in
 * `timeoutMs` with the nats.js `TimeoutError`.
 */
export async function publishToStream(
  requester: Requester,
  subject: string,
  data: Uint8Array,
  headers: MsgHdrs | undefined,
  options: { timeoutMs?: number } = {},
): Promise<StreamAck> {
  const reply = await requester.request(subject, data, {
    timeoutMs: options.timeoutMs ?? DIRECT_GET_TIMEOUT_MS,
    ...(headers ? { headers } : {}),
  });
  if (reply === NO_RESPONDERS) {
    // The stream without a leader (a NATS server restarting): infrastructure trouble, so a
    // handler that posts and fails on it is retried without counting towards a dead letter.
    throw new TroupeError('UNAVAILABLE', `publish to ${subject}: no stream answered`, {
      retryable: true,
      reason: ErrorReason.STORE_UNAVAILABLE,
    });
  }
  const ack = decodeJson(reply.data) as Partial<StreamAck> & { error?: ApiError };
  if (ack?.error) throw new JetStreamApiError(ack.error);
  if (typeof ack?.stream !== 'string' || ack.stream === '' || typeof ack.seq !== 'number') {
    throw new Error(`publish to ${subject}: invalid acknowledgement`);
  }
  return { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate === true };
}
