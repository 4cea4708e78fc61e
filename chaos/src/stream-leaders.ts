import { setTimeout as delay } from 'node:timers/promises';
import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { type NatsConnection } from '@nats-io/transport-node';

/** How long one probe of a stream waits for its leader's answer. */
const PROBE_TIMEOUT_MS = 1_000;
/** Pause between two rounds of probes. */
const ROUND_PAUSE_MS = 100;
/** A subject no stream stores: a led stream answers "no message found" at once. */
const PROBE_SUBJECT = '$TROUPE.chaos.leader-probe';

/**
 * Watches a JetStream cluster from a fault on its servers until every stream answers its leader
 * again: the time the cluster itself needs after a server is killed or restarted, which no
 * client can shorten. A follower waits 4–9 s without its leader's heartbeat before it campaigns
 * (nats-server's Raft election timeout, not configurable), so a stream led by the server hit has
 * no leader for that long, and every write to it waits.
 *
 * Each round asks every stream for a message by subject (`$JS.API.STREAM.MSG.GET`, which only
 * a stream's leader answers) and lists the streams (which the meta leader answers); the first
 * round in which all answer ends the watch, at that round's start.
 */
export class StreamLeaderWatch {
  private ledAt: number | undefined;
  private readonly done: Promise<number | undefined>;
  private readonly abort = new AbortController();

  private constructor(jsm: JetStreamManager, deadlineMs: number) {
    this.done = this.watch(jsm, Date.now() + deadlineMs);
  }

  /** Starts watching now (call it once the fault is in place). */
  static async start(nc: NatsConnection, deadlineMs = 60_000): Promise<StreamLeaderWatch> {
    // No API check: right after a server's loss JetStream may not answer it (that is what is
    // being measured), and the check would fail the start.
    return new StreamLeaderWatch(
      await jetstreamManager(nc, { timeout: PROBE_TIMEOUT_MS, checkAPI: false }),
      deadlineMs,
    );
  }

  /** The time (ms) every stream was led again, or undefined when the deadline passed first. */
  led(): Promise<number | undefined> {
    return this.done;
  }

  /** Stops watching (the time is then undefined if it was not reached). */
  stop(): void {
    this.abort.abort();
  }

  private async watch(jsm: JetStreamManager, deadline: number): Promise<number | undefined> {
    while (this.ledAt === undefined && Date.now() < deadline && !this.abort.signal.aborted) {
      // The round's start, not its end: a stream elected during the round counts as led from its
      // start, so the time put on the cluster is never more than it took.
      const round = Date.now();
      if (await allLed(jsm)) this.ledAt = round;
      else await delay(ROUND_PAUSE_MS).catch(() => undefined);
    }
    return this.ledAt;
  }
}

async function allLed(jsm: JetStreamManager): Promise<boolean> {
  let names: string[];
  try {
    names = [];
    for await (const name of jsm.streams.names()) names.push(name);
  } catch {
    return false; // no meta leader (or the harness's connection is reconnecting)
  }
  const answers = await Promise.all(names.map((name) => leads(jsm, name)));
  return answers.every(Boolean);
}

async function leads(jsm: JetStreamManager, stream: string): Promise<boolean> {
  try {
    await jsm.streams.getMessage(stream, { last_by_subj: PROBE_SUBJECT });
    return true;
  } catch (err) {
    return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound;
  }
}
