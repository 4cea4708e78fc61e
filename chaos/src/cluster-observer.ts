import { Kvm } from '@nats-io/kv';
import { kvBucketName } from '@troupe/proto';
import { type DockerEvent, followContainerEvents } from '@troupe/test-cluster';
import type { ChaosCluster } from './chaos-cluster';

/** One `exec_start` or `exec_die` of a sandbox, as Docker reported it. */
export interface ExecRecord {
  readonly action: 'exec_start' | 'exec_die';
  readonly execId: string;
  /** The command (exec_start only: `exec_start: <command>`). */
  readonly command?: string;
  /** exit code (exec_die only). */
  readonly exitCode?: number;
  readonly atMs: number;
}

/** One directory entry as the harness saw it change. */
export interface DirectoryRecord {
  readonly key: string;
  readonly state: string;
  readonly hostId?: string;
  readonly incarnation?: string;
  readonly epoch: number;
  readonly atMs: number;
}

/**
 * What the harness watches besides the job events, for the whole run: Docker's exec events of
 * the cluster's sandboxes (to count executions of each task command) and every change of the
 * actor directory (to check that no two activations of an actor were ever live).
 */
export class ClusterObserver {
  readonly execs: ExecRecord[] = [];
  readonly directory: DirectoryRecord[] = [];
  private readonly stops: (() => void)[] = [];

  static async start(c: ChaosCluster): Promise<ClusterObserver> {
    const self = new ClusterObserver();
    self.stops.push(
      await followContainerEvents(c, ['exec_start', 'exec_die'], (e) => self.onExec(e)),
    );
    const kv = await new Kvm(c.nc).open(kvBucketName(c.cluster, 'directory'));
    const watch = await kv.watch({ key: '>' });
    self.stops.push(() => watch.stop());
    void (async () => {
      for await (const e of watch) {
        if (e.operation !== 'PUT') continue;
        try {
          const v = e.json<{
            state: string;
            hostId?: string;
            incarnation?: string;
            epoch: number;
          }>();
          self.directory.push({
            key: e.key,
            state: v.state,
            ...(v.hostId !== undefined ? { hostId: v.hostId } : {}),
            ...(v.incarnation !== undefined ? { incarnation: v.incarnation } : {}),
            epoch: v.epoch,
            atMs: Date.now(),
          });
        } catch {
          // Not a directory entry the harness understands: the invariants ignore it.
        }
      }
    })();
    return self;
  }

  /** Stops following. */
  stop(): void {
    for (const s of this.stops.splice(0)) s();
  }

  private onExec(e: DockerEvent): void {
    const action = e.Action ?? '';
    const attrs = e.Actor?.Attributes ?? {};
    const execId = attrs['execID'] ?? '';
    if (action.startsWith('exec_start')) {
      this.execs.push({
        action: 'exec_start',
        execId,
        command: action.slice('exec_start:'.length).trim(),
        atMs: Date.now(),
      });
    } else if (action.startsWith('exec_die')) {
      this.execs.push({
        action: 'exec_die',
        execId,
        exitCode: Number(attrs['exitCode'] ?? NaN),
        atMs: Date.now(),
      });
    }
  }
}
