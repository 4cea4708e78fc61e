import { invalidArgument, validateClusterName } from '@troupe/proto';
import { TASK_ID_PATTERN } from './journal-record';

// The evolve journal's names, built here (not inline) like the names in @troupe/proto.

/** `TROUPE_<C>_EVOLVE` (cluster upper-cased, `-` → `_`): the stream of every search journal. */
export function evolveStreamName(cluster: string): string {
  return `TROUPE_${validateClusterName(cluster).toUpperCase().replaceAll('-', '_')}_EVOLVE`;
}

/** `troupe.<c>.evolve.<taskId>`: the journal of one search task. */
export function evolveSubject(cluster: string, taskId: string): string {
  return `troupe.${validateClusterName(cluster)}.evolve.${validateTaskId(taskId)}`;
}

/** `troupe.<c>.evolve.>`: the subjects of the evolve stream. */
export function evolveSubjectFilter(cluster: string): string {
  return `troupe.${validateClusterName(cluster)}.evolve.>`;
}

/** `<taskId>-i<k>`: the id of the actor of island `k`. */
export function islandActorId(taskId: string, island: number): string {
  return `${validateTaskId(taskId)}-i${island}`;
}

/**
 * Checks a task id (`[A-Za-z0-9_-]{1,100}`) and returns it.
 * @throws TroupeError `INVALID_ARGUMENT` naming the rule
 */
export function validateTaskId(taskId: unknown): string {
  if (typeof taskId !== 'string' || !TASK_ID_PATTERN.test(taskId)) {
    throw invalidArgument('taskId', 'must match [A-Za-z0-9_-]{1,100}', taskId);
  }
  return taskId;
}
