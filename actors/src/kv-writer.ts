import { Bucket, type KV, type KvEntry } from '@nats-io/kv';
import { Empty, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { ErrorReason, TroupeError } from '@troupe/proto';
import { isWrongLastSequence } from './internal/kv-errors';
import { DIRECT_GET_TIMEOUT_MS, directGet, publishToStream } from './internal/direct-get';
import { type Requester, requesterOf } from './internal/requester';

/** The header of a KV write's compare-and-set (nats.js `PubHeaders.ExpectedLastSubjectSequenceHdr`). */
const EXPECTED_LAST_SUBJECT_SEQ = 'Nats-Expected-Last-Subject-Sequence';

/**
 * Writes the keys of one KV bucket as nats.js' `kv.put`, `kv.update` and `kv.create` do, with the
 * same answers and errors, but through the connection's {@link Requester}: nats.js' `request()`,
 * under every `js.publish`, allocates an `Error` for each request it completes, and a job of
 * 10,000 trivial tasks spent 8 % of the coordinator's CPU on them (state commits, directory
 * writes, task results). So does {@link get}, the read of a key's latest entry on the hot paths
 * (an actor's state record at each activation, a directory entry); other reads stay with the
 * bucket.
 *
 * Errors: a stale revision rejects with the server's "wrong last sequence" (see
 * `isWrongLastSequence`); nobody answering with `UNAVAILABLE` (reason `STORE_UNAVAILABLE`); no
 * answer in time with the nats.js `TimeoutError`. All but the first are transient NATS errors
 * (`isTransientNatsError`).
 */
export class KvWriter {
  private readonly requester: Requester;
  private readonly bucket: Bucket;

  constructor(
    nc: NatsConnection,
    /** The bucket (a `Kvm`'s): its subjects, and on a create's rare second step its reads. */
    kv: KV,
    /** How long a write waits for the stream's acknowledgement. @default 5000 */
    private readonly timeoutMs: number = DIRECT_GET_TIMEOUT_MS,
  ) {
    // Kvm's buckets are Bucket instances, which name the subject of a key's writes.
    if (!(kv instanceof Bucket)) throw new TypeError('KvWriter: kv must be a bucket Kvm opened');
    this.bucket = kv;
    this.requester = requesterOf(nc);
  }

  /**
   * Writes `value` to `key` and returns its revision. With `previousSeq`, only while the key's
   * last revision is that one (0: the key has no entry at all, not even a delete marker).
   */
  async put(
    key: string,
    value: Uint8Array | string,
    options: { previousSeq?: number; timeoutMs?: number } = {},
  ): Promise<number> {
    // As nats.js' put: the key encoded by the bucket's codec and checked, on the bucket's
    // subject for writes (a mirror's is its origin's).
    const encoded = this.bucket.encodeKey(key);
    this.bucket.validateKey(encoded);
    let h;
    if (options.previousSeq !== undefined) {
      h = natsHeaders();
      h.set(EXPECTED_LAST_SUBJECT_SEQ, String(options.previousSeq));
    }
    const data = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    const ack = await publishToStream(
      this.requester,
      this.bucket.subjectForKey(encoded, true),
      data,
      h,
      { timeoutMs: options.timeoutMs ?? this.timeoutMs },
    );
    return ack.seq;
  }

  /**
   * The latest entry of `key` (its value, or a delete or purge marker), null when it was never
   * written: what the bucket's `get` answers. With direct gets allowed (Troupe's buckets), the
   * key's last message by a direct get through the {@link Requester}, asked again every
   * `DIRECT_GET_RESEND_MS` without an answer (a stream without a leader drops reads); else
   * the bucket's own `get`. Nobody answering rejects with `UNAVAILABLE` (reason
   * `STORE_UNAVAILABLE`), no answer in time with the nats.js `TimeoutError`.
   */
  async get(key: string, options: { timeoutMs?: number } = {}): Promise<KvEntry | null> {
    if (!this.bucket.direct) return this.bucket.get(key);
    const encoded = this.bucket.encodeKey(key);
    this.bucket.validateKey(encoded);
    const subject = this.bucket.subjectForKey(encoded);
    const msg = await directGet(
      this.requester,
      `$JS.API.DIRECT.GET.${this.bucket.bucketName()}.${subject}`,
      Empty,
      {
        timeoutMs: options.timeoutMs ?? this.timeoutMs,
        noAnswer: () =>
          new TroupeError('UNAVAILABLE', `read of ${key}: JetStream did not answer`, {
            retryable: true,
            reason: ErrorReason.STORE_UNAVAILABLE,
          }),
      },
    );
    if (!msg) return null;
    const entry = this.bucket.smToEntry(msg);
    // As the bucket's get: a message of another key (never, for a validated key) is no entry.
    return (entry as { rawKey?: string }).rawKey === encoded ? entry : null;
  }

  /** Writes `value` only if `key` is still at `revision` (> 0); returns the new revision. */
  update(key: string, value: Uint8Array | string, revision: number): Promise<number> {
    if (revision <= 0) throw new RangeError(`update of ${key}: revision must be > 0`);
    return this.put(key, value, { previousSeq: revision });
  }

  /**
   * Writes `value` only if `key` holds no value: it has no entry, or its last one is a delete or
   * purge marker (then a second write, at the marker's revision). Returns the new revision; a live
   * value rejects with "wrong last sequence".
   */
  async create(key: string, value: Uint8Array | string): Promise<number> {
    try {
      return await this.put(key, value, { previousSeq: 0 });
    } catch (err) {
      if (!isWrongLastSequence(err)) throw err;
      const e = await this.bucket.get(key);
      if (e && (e.operation === 'DEL' || e.operation === 'PURGE')) {
        return this.update(key, value, e.revision);
      }
      throw err;
    }
  }
}
