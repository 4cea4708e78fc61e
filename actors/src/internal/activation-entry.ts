import { type ActorAddress } from '@troupe/proto';
import { type DirectoryEntry, type Directory, jobScopeOf } from '../directory';
import { FencedError } from '../state-store';

/** The host an activation runs on, as its directory entry names it. */
export interface EntryHost {
  readonly directory: Directory;
  readonly hostId: string;
  /** Read at every write: it changes when the host registers again. */
  readonly incarnation: string;
}

/**
 * An activation's directory entry `{state, hostId, incarnation, epoch}`: written only by
 * compare-and-set, and only while it still names this host, incarnation and epoch.
 */
export class ActivationEntry {
  constructor(
    private readonly host: EntryHost,
    private readonly address: ActorAddress,
    private readonly epoch: number,
    jobId: string | undefined,
    retireWithJob = false,
  ) {
    this.scope = jobScopeOf({
      ...(jobId ? { jobId } : {}),
      ...(jobId && retireWithJob ? { retireWithJob: true as const } : {}),
    });
  }

  /** The job this activation works for, as its entry records it (see {@link jobScopeOf}). */
  private readonly scope: Pick<DirectoryEntry, 'jobId' | 'retireWithJob'>;
  /**
   * The entry as this activation last wrote it, and the revision the write made. The next
   * {@link mark} tries its CAS on that revision without reading the entry first: it succeeds only
   * if nobody has written since, so the entry still names this host, incarnation and epoch.
   */
  private written?: { entry: DirectoryEntry; revision: number };

  /**
   * Writes the entry IDLE on this host at this epoch, by CAS on `revision` (the SLEEPING entry a
   * placer read, or the ACTIVATING one it wrote); false when the entry has changed since.
   */
  async claimIdle(revision: number): Promise<boolean> {
    const entry: DirectoryEntry = {
      state: 'IDLE',
      hostId: this.host.hostId,
      incarnation: this.host.incarnation,
      epoch: this.epoch,
      ...this.scope,
      updatedAtMs: Date.now(),
    };
    const rev = await this.host.directory.compareAndSet(this.address, revision, entry);
    if (rev !== undefined) this.written = { entry, revision: rev };
    return rev !== undefined;
  }

  /**
   * Moves the entry from `from` (any live state when undefined) to `to`, by CAS and only while it
   * still names this host, incarnation and epoch; otherwise the activation has been fenced
   * ({@link FencedError}).
   */
  async mark(
    from: 'ACTIVATING' | 'IDLE' | 'RUNNING' | undefined,
    to: 'IDLE' | 'RUNNING' | 'SLEEPING',
    reason?: string,
  ): Promise<void> {
    // First from what this activation wrote last (no read), while its host is the incarnation
    // that wrote it; after a failed CAS, from the entry as it is now (up to five reads).
    let known =
      this.written?.entry.incarnation === this.host.incarnation && this.written.entry.state !== to
        ? this.written
        : undefined;
    this.written = undefined;
    for (let reads = 0; known || reads < 5;) {
      let current = known;
      known = undefined;
      if (!current) {
        reads++;
        current = await this.host.directory.get(this.address);
      }
      const { entry, revision } = current;
      const ours =
        entry.hostId === this.host.hostId &&
        (entry.incarnation === undefined || entry.incarnation === this.host.incarnation) &&
        entry.epoch === this.epoch &&
        (from === undefined ? entry.state !== 'SLEEPING' && entry.state !== 'STOPPED' : true);
      if (!ours) {
        throw new FencedError(
          this.address,
          `directory names ${entry.hostId ?? '-'} epoch ${entry.epoch}`,
        );
      }
      if (entry.state === to) return;
      const scope = { ...jobScopeOf(entry), ...this.scope };
      const next =
        to === 'SLEEPING'
          ? {
              state: to,
              epoch: this.epoch,
              ...scope,
              updatedAtMs: Date.now(),
              ...(reason ? { reason } : {}),
            }
          : { ...entry, ...scope, state: to, updatedAtMs: Date.now() };
      const rev = await this.host.directory.compareAndSet(this.address, revision, next);
      if (rev !== undefined) {
        this.written = { entry: next, revision: rev };
        return;
      }
    }
    throw new FencedError(this.address, 'directory entry kept changing');
  }
}
