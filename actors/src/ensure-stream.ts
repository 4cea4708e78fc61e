import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { type Logger, noopLogger, TroupeError } from '@troupe/proto';
import { whileJetStreamStarts } from './internal/while-jetstream-starts';

/** The stream {@link ensureStream} makes sure of. */
export interface StreamSpec {
  /** Stream name (from a `@troupe/proto` builder). */
  name: string;
  /** Subjects the stream captures. */
  subjects: string[];
  /**
   * Replicas when the stream has to be created (3 on a 3-node JetStream cluster).
   * @default 1
   */
  replicas?: number;
  /**
   * Window in which the stream drops a repeated `Nats-Msg-Id`.
   * @default the server's (2 minutes)
   */
  duplicateWindowMs?: number;
  /**
   * How long messages are kept; 0 keeps them forever.
   * @default 0
   */
  maxAgeMs?: number;
  /** Allow direct gets (`last_by_subj` without a leader round trip). @default false */
  allowDirect?: boolean;
}

/** What {@link ensureStream} found or did. */
export interface EnsuredStream {
  /** True when this call created the stream. */
  created: boolean;
  /**
   * Settings of an existing stream that differ from the spec, e.g.
   * `num_replicas: 1 (wanted 3)`. The stream is used as it is: nothing is changed.
   */
  differences: string[];
}

/**
 * Creates a JetStream stream if it does not exist; safe to call from every process at once.
 *
 * - A missing stream (JetStream API error 10059) is created with the spec's settings; any other
 *   error reading it is `UNAVAILABLE` ("cannot read stream X"), after retrying for up to 30 s
 *   while the error is transient (a cluster whose servers have just started answers nothing
 *   until it has elected its meta leader).
 * - When the create fails because another process created the stream in between, that stream is
 *   used; otherwise `UNAVAILABLE` ("cannot create stream X", the server's error as `cause`).
 * - An **existing stream with other settings is accepted as it is** (settings are never
 *   changed behind an operator's back, e.g. replicas raised by hand): each difference in
 *   subjects, replicas, duplicate window or max age is returned in `differences` and logged as
 *   one warning naming the stream and the fields.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  spec: StreamSpec,
  options: { logger?: Logger } = {},
): Promise<EnsuredStream> {
  const log = options.logger ?? noopLogger;
  let existing: StreamInfo | undefined;
  try {
    existing = await whileJetStreamStarts(() => jsm.streams.info(spec.name));
  } catch (err) {
    if (!isStreamNotFound(err)) {
      throw new TroupeError('UNAVAILABLE', `cannot read stream ${spec.name}`, { cause: err });
    }
  }
  if (!existing) {
    try {
      await whileJetStreamStarts(() => jsm.streams.add(streamConfigOf(spec)));
      return { created: true, differences: [] };
    } catch (err) {
      // Another process may have created it between our check and our add.
      try {
        existing = await jsm.streams.info(spec.name);
      } catch {
        throw new TroupeError('UNAVAILABLE', `cannot create stream ${spec.name}`, { cause: err });
      }
    }
  }
  const differences = differencesOf(existing.config, spec);
  if (differences.length > 0) {
    log.warn(
      { stream: spec.name, differences },
      'stream exists with other settings; using it as it is',
    );
  }
  return { created: false, differences };
}

function streamConfigOf(spec: StreamSpec): Partial<StreamConfig> & { name: string } {
  return {
    name: spec.name,
    subjects: spec.subjects,
    num_replicas: spec.replicas ?? 1,
    ...(spec.duplicateWindowMs !== undefined
      ? { duplicate_window: spec.duplicateWindowMs * 1_000_000 }
      : {}),
    ...(spec.maxAgeMs !== undefined ? { max_age: spec.maxAgeMs * 1_000_000 } : {}),
    ...(spec.allowDirect ? { allow_direct: true } : {}),
  };
}

function differencesOf(actual: StreamConfig, spec: StreamSpec): string[] {
  const out: string[] = [];
  const wantSubjects = [...spec.subjects].sort();
  const haveSubjects = [...(actual.subjects ?? [])].sort();
  if (wantSubjects.join('\n') !== haveSubjects.join('\n')) {
    out.push(`subjects: ${haveSubjects.join(',')} (wanted ${wantSubjects.join(',')})`);
  }
  const replicas = spec.replicas ?? 1;
  if (actual.num_replicas !== replicas) {
    out.push(`num_replicas: ${actual.num_replicas} (wanted ${replicas})`);
  }
  if (
    spec.duplicateWindowMs !== undefined &&
    actual.duplicate_window !== spec.duplicateWindowMs * 1_000_000
  ) {
    out.push(
      `duplicate_window: ${actual.duplicate_window / 1_000_000} ms (wanted ${spec.duplicateWindowMs} ms)`,
    );
  }
  if (spec.maxAgeMs !== undefined && actual.max_age !== spec.maxAgeMs * 1_000_000) {
    out.push(`max_age: ${actual.max_age / 1_000_000} ms (wanted ${spec.maxAgeMs} ms)`);
  }
  return out;
}

/** True for JetStream's "stream not found" (API error 10059). */
function isStreamNotFound(err: unknown): boolean {
  if (err instanceof JetStreamApiError) return err.code === JetStreamApiCodes.StreamNotFound;
  return err instanceof Error && /stream not found/i.test(err.message);
}
