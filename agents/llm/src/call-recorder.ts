import type { TroupeErrorJson } from '@troupe/proto';
import type { FinishReason, LlmUsage } from './chat-result';

/** What is recorded about one {@link LlmClient.chat} call, successful or not. */
export interface LlmCallRecord {
  /** Registry name of the model (as requested, even when unknown). */
  model: string;
  /** Id of the call. */
  requestId: string;
  /** When the call started, epoch ms. */
  startedAtMs: number;
  /** Wall time of the call, queueing and retries included. */
  latencyMs: number;
  /** Requests sent (0 when the call failed before sending, e.g. budget exhausted). */
  attempts: number;
  /** Token counts (zero when nothing was generated). */
  usage: LlmUsage;
  /** Whether `usage` is estimated rather than reported by the provider. */
  usageEstimated: boolean;
  /** Cost of the call in USD. */
  costUsd: number;
  /** `ok`, or `error` with {@link LlmCallRecord.error}. */
  status: 'ok' | 'error';
  /** The error the caller got (its wire shape; secrets redacted). @default absent on success */
  error?: TroupeErrorJson;
  /** Why generation stopped. @default absent on error */
  finishReason?: FinishReason;
  /** Whether the call streamed. */
  streamed: boolean;
  /** The caller's metadata. @default absent */
  metadata?: Readonly<Record<string, string | number | boolean>>;
}

/** Receives a record of every call; errors it throws are logged and otherwise ignored. */
export interface CallRecorder {
  /** Stores or forwards one record. Must not block: it runs on the call's path. */
  record(record: LlmCallRecord): void;
}
