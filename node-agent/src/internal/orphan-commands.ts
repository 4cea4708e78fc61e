import { type ActorSystem, StateStore } from '@troupe/actors';
import {
  type ActorAddress,
  formatAddress,
  kvBucketName,
  type Logger,
  parseAddress,
} from '@troupe/proto';
import { Kvm } from '@nats-io/kv';
import { type NatsConnection } from '@nats-io/transport-node';
import type Docker from 'dockerode';
import { TroupeLabel } from '../labels';
import { SANDBOX_KIND, SandboxActorStateSchema } from '../sandbox-actor-messages';

/** Exit codes from here up are not taken as a dead process's command's verdict. */
const UNTRUSTED_EXIT_CODES = 126;

/** How a command of a dead process's sandbox ended, for its actor's `commandEnded`. */
export interface OrphanCommandEnd {
  actor: ActorAddress;
  taskId: string;
  /** The command's handle (Docker exec id). */
  handle: string;
  /**
   * Its exit code when it ran to its end; undefined when it did not: still running, so killed
   * with its container, or ended with a code that may be its killed agent's rather than its own
   * (see {@link UNTRUSTED_EXIT_CODES}).
   */
  exitCode?: number;
  /** Why its end is not an exit, when it is not. */
  unknownEnd?: string;
}

/**
 * Reads, before the reaper removes an orphaned sandbox container (what an earlier process of this
 * host left when it was killed), how the commands its actor recorded as running ended: Docker
 * keeps an exec's exit code while its container exists, not its output. `collect` receives one
 * entry per ended command; the node agent posts them (`commandEnded`) once its actor system runs.
 */
export function orphanCommandReader(
  nc: NatsConnection,
  cluster: string,
  docker: Docker,
  collect: (end: OrphanCommandEnd) => void,
  log: Logger,
): (container: { id: string; labels: Readonly<Record<string, string>> }) => Promise<void> {
  let states: Promise<StateStore | undefined> | undefined;
  // An existing bucket only: a node agent never creates the cluster's buckets (the coordinator
  // does, with the cluster's replicas). No bucket, no state, nothing to read.
  const store = () =>
    (states ??= new Kvm(nc)
      .open(kvBucketName(cluster, 'state'))
      .then((kv) => new StateStore(kv, nc))
      .catch(() => undefined));
  return async ({ id: containerId, labels }) => {
    let actor: ActorAddress;
    try {
      actor = parseAddress(labels[TroupeLabel.ACTOR] ?? '');
    } catch {
      return;
    }
    if (actor.kind !== SANDBOX_KIND) return;
    const stored = await (await store())?.read(actor);
    const parsed = SandboxActorStateSchema.safeParse(stored?.record.data);
    if (!parsed.success) {
      log.info({ actor: formatAddress(actor) }, 'an orphan’s sandbox has no state to read');
      return;
    }
    // What was read, for tracing a command run again after its agent's kill (chaos "ran again").
    log.info(
      {
        actor: formatAddress(actor),
        revision: stored?.revision,
        commands: (parsed.data.commands ?? []).map((c) => ({
          taskId: c.taskId,
          handle: c.handle !== undefined,
          ended: c.ended?.state ?? null,
        })),
      },
      'reading an orphan’s commands',
    );
    for (const c of parsed.data.commands ?? []) {
      if (c.ended || !c.handle) continue;
      const exec = await docker
        .getExec(c.handle)
        .inspect()
        .catch((err: unknown) => {
          log.warn({ err, actor: formatAddress(actor), taskId: c.taskId }, 'no exec to read');
          return undefined;
        });
      if (!exec) continue;
      log.info(
        {
          actor: formatAddress(actor),
          taskId: c.taskId,
          running: exec.Running,
          exitCode: exec.ExitCode,
        },
        'an orphan’s command as Docker kept it',
      );
      const base = { actor, taskId: c.taskId, handle: c.handle };
      if (exec.Running) {
        // Removing the container kills it: say so, rather than leave a caller waiting for an
        // end that will never be reported.
        collect({ ...base, unknownEnd: 'killed with its container by the restarted node agent' });
        continue;
      }
      // Created but never started (a record written ahead of a start that did not happen).
      if (typeof exec.ExitCode !== 'number') continue;
      let exitCode = exec.ExitCode;
      if (exitCode >= UNTRUSTED_EXIT_CODES) {
        // Docker's inspect says 126 for an exec whose attached client died as it started it,
        // even when the command then ran to its end: its `exec_die` event has the real code
        // (dockerd 20.10; chaos seeds 7023, 8010, 8025 and 9029 ran such finished commands
        // again). Read from the daemon's recent events while it keeps them (the last 256).
        const fromEvent = await execDieExitCode(docker, containerId, c.handle, c.startedAtMs).catch(
          (err: unknown) => {
            log.warn({ err, actor: formatAddress(actor) }, 'could not read Docker’s exec events');
            return undefined;
          },
        );
        log.info(
          { actor: formatAddress(actor), taskId: c.taskId, inspected: exitCode, fromEvent },
          'an orphan’s command’s exit code from Docker’s events',
        );
        if (fromEvent !== undefined) exitCode = fromEvent;
      }
      // 126 and above may still be the exec torn down with the killed agent rather than the
      // command's own verdict (Docker could not run it: 126; a signal such as SIGPIPE once the
      // agent's end of the output closed: 128+n). Recorded as not an exit, the command is run
      // again: a re-run, never a wrong answer.
      if (exitCode >= UNTRUSTED_EXIT_CODES) {
        collect({
          ...base,
          unknownEnd: `exit code ${exitCode} after its node agent was killed: not its own verdict`,
        });
        continue;
      }
      collect({ ...base, exitCode });
    }
  };
}

/**
 * The exit code of exec `execId` of container `containerId` as its `exec_die` event reported it,
 * from the daemon's kept events since `sinceMs` (it keeps its last 256); undefined when it no
 * longer has the event.
 */
export async function execDieExitCode(
  docker: Docker,
  containerId: string,
  execId: string,
  sinceMs: number,
): Promise<number | undefined> {
  const stream = (await docker.getEvents({
    since: Math.floor(sinceMs / 1_000) - 1,
    // The current second, so the daemon ends the stream at once rather than wait for events.
    until: Math.ceil(Date.now() / 1_000),
    filters: { type: ['container'], event: ['exec_die'], container: [containerId] },
  })) as unknown as AsyncIterable<Buffer>;
  let text = '';
  for await (const chunk of stream) text += chunk.toString();
  let found: number | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const attrs = (JSON.parse(line) as { Actor?: { Attributes?: Record<string, string> } }).Actor
      ?.Attributes;
    const code = Number(attrs?.['exitCode']);
    if (attrs?.['execID'] === execId && Number.isInteger(code)) found = code;
  }
  return found;
}

/** Posts the collected ends to their sandbox actors (`commandEnded`, once per command). */
export async function postOrphanCommandEnds(
  system: ActorSystem,
  ends: readonly OrphanCommandEnd[],
  log: Logger,
): Promise<void> {
  for (const e of ends) {
    await system
      .refOf(e.actor)
      .post(
        'commandEnded',
        {
          taskId: e.taskId,
          ended: {
            ...(e.exitCode !== undefined
              ? {
                  state: 'exited' as const,
                  exitCode: e.exitCode,
                  error: 'its output went with the node agent process that ran it',
                }
              : { state: 'killed' as const, error: e.unknownEnd ?? 'its end is not known' }),
            stdout: '',
            stderr: '',
            stdoutDroppedBytes: 0,
            stderrDroppedBytes: 0,
            durationMs: 0,
          },
        },
        { dedupeId: `exec-ended-${e.handle}` },
      )
      .then(() => {
        log.info(
          {
            actor: formatAddress(e.actor),
            taskId: e.taskId,
            exitCode: e.exitCode,
            unknownEnd: e.unknownEnd,
          },
          'reported an orphaned command’s end',
        );
      })
      .catch((err: unknown) => {
        log.warn({ err, actor: e.actor }, 'could not report an orphaned command’s end');
      });
  }
}
