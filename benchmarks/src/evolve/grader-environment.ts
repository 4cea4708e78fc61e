import { type SearchTaskSpec } from '@troupe/evolve';
import { errorCode, invalidArgument, parseWith } from '@troupe/proto';
import { type TaskEnvironment, TaskEnvironmentSchema } from '../issue-resolution/task-environment';

/** Where an evolve evaluation's files go in a grader environment (owned by the sandbox user). */
export const GRADER_ENVIRONMENT_WORKDIR = '/workspace';

/**
 * The grader environment a suite names (`evaluator.environment`), validated as a task environment
 * whose `base` defaults to the suite's `evaluator.image`; undefined when it names none.
 * @throws TroupeError `INVALID_ARGUMENT` on `field`, naming the broken entry
 *   (`task.yaml.evaluator.environment.apt[0]: …`)
 */
export function graderEnvironmentOf(
  spec: SearchTaskSpec,
  field: string,
): TaskEnvironment | undefined {
  const raw = spec.evaluator.environment;
  if (raw === undefined) return undefined;
  try {
    return parseWith(
      TaskEnvironmentSchema,
      { base: spec.evaluator.image, ...raw },
      { prefix: 'task.yaml.evaluator.environment' },
    );
  } catch (err) {
    if (errorCode(err) !== 'INVALID_ARGUMENT') throw err;
    throw invalidArgument(field, (err as Error).message);
  }
}
