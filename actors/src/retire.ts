import { type ActorAddress, inboxStreamName, inboxSubject, TroupeError } from '@troupe/proto';
import { type JetStreamManager } from '@nats-io/jetstream';
import { type Directory, isLiveState, jobScopeOf } from './directory';
import { deleteSubjectMessages } from './internal/subject-delete';
import { type StateStore, storeOutageOf } from './state-store';

/** What {@link retireActor} needs: an {@link ActorSystem} has all of it. */
export interface RetireDeps {
  readonly cluster: string;
  readonly jsm: JetStreamManager;
  readonly directory: Directory;
  readonly states: StateStore;
}

/**
 * What {@link retireActor} did: `retired` (its records are gone), `live` (it has an activation:
 * nothing done), `absent` (no directory entry), `changed` (the entry changed while it was being
 * retired: nothing done, look again later).
 */
export type RetireOutcome = 'retired' | 'live' | 'absent' | 'changed';

/** The directory reason of an actor being retired. */
export const RETIRED_REASON = 'retired';

/**
 * Deletes a sleeping actor's durable records: its inbox messages, its state and its directory
 * entry, leaving no marker behind (so the server's per-subject state goes too). The entry is
 * first moved to STOPPED by compare-and-set, which fences the actor: an activation racing the
 * retirement fails its claim and is refused (`UNAVAILABLE`, not retryable, "is STOPPED:
 * retired") instead of starting on records being deleted; the entry goes last and only if still
 * that STOPPED one. Dead letters are kept. Afterwards the address is unknown: a message to it
 * starts a new actor from its initial state. For actors nothing will address again (a finished
 * job's task actors and sandboxes).
 */
export async function retireActor(deps: RetireDeps, addr: ActorAddress): Promise<RetireOutcome> {
  const { entry, revision } = await deps.directory.get(addr);
  if (revision === 0) return 'absent';
  if (isLiveState(entry.state)) return 'live';
  const stopped = await deps.directory.compareAndSet(addr, revision, {
    state: 'STOPPED',
    epoch: entry.epoch,
    ...jobScopeOf(entry),
    updatedAtMs: Date.now(),
    reason: RETIRED_REASON,
  });
  if (stopped === undefined) return 'changed';
  try {
    // By sequence, not a filtered purge, which makes the wake consumer skip other actors'
    // messages (see deleteSubjectMessages).
    await deleteSubjectMessages(
      deps.jsm,
      inboxStreamName(deps.cluster),
      inboxSubject(deps.cluster, addr),
    );
  } catch (err) {
    throw (
      storeOutageOf(err, 'inbox stream') ??
      new TroupeError('UNAVAILABLE', 'deleting the inbox messages failed', { cause: err })
    );
  }
  await deps.states.remove(addr);
  await deps.directory.remove(addr, stopped);
  return 'retired';
}
