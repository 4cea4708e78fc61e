/**
 * NATS message header names used by Troupe. Build headers with these names only; values are
 * single-line strings (NATS rejects `\r`/`\n`).
 */
export const Header = {
  /** `ErrorCode` of an error reply. Its presence marks a reply as an error. */
  ERROR_CODE: 'Troupe-Error-Code',
  /** Message of an error reply, as an ASCII-only JSON string literal. */
  ERROR_MESSAGE: 'Troupe-Error-Message',
  /** `true` or `false`: whether the error of a reply is retryable. */
  ERROR_RETRYABLE: 'Troupe-Error-Retryable',
  /** Details of an error reply, an ASCII-only JSON object. */
  ERROR_DETAILS: 'Troupe-Error-Details',
  /** `ErrorReason` of an error reply, when it has one (peers that predate it send none). */
  ERROR_REASON: 'Troupe-Error-Reason',
  /** Name of the message type in an actor's protocol (the handler key, e.g. `add`). */
  MSG_TYPE: 'Troupe-Msg-Type',
  /** Address (`kind/id`) or host id of the sender, for replies and tracing. */
  SENDER: 'Troupe-Sender',
  /** Absolute deadline of the request, Unix epoch milliseconds (decimal). */
  DEADLINE: 'Troupe-Deadline',
  /** Activation epoch (fencing token) the message is meant for or was sent by (decimal). */
  EPOCH: 'Troupe-Epoch',
  /** Delivery attempt of a durable message, starting at 1 (decimal). */
  ATTEMPT: 'Troupe-Attempt',
  /** Id of the job the message belongs to. */
  JOB: 'Troupe-Job',
  /** `1` on an ask that must fail with `BUSY` instead of queueing behind a running turn. */
  REQUIRE_IDLE: 'Troupe-Require-Idle',
  /** Inbox stream sequence of the original message, on a dead-lettered copy (decimal). */
  ORIGINAL_SEQ: 'Troupe-Original-Seq',
  /** Per-job sequence number (1, 2, 3, …) of a job event on the events stream (decimal). */
  EVENT_SEQ: 'Troupe-Event-Seq',
  /** Type of a job event (a `JobEventType` name), so readers can filter without decoding. */
  EVENT_TYPE: 'Troupe-Event-Type',
  /** JetStream de-duplication id (`post(msg, {dedupeId})`); a NATS-defined header. */
  MSG_ID: 'Nats-Msg-Id',
} as const;

/** One of the {@link Header} names. */
export type Header = (typeof Header)[keyof typeof Header];
