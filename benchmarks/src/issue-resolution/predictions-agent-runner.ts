import { invalidArgument } from '@troupe/proto';
import { type TaskAgentRunner } from './task-agent-runner';
import { applyPatchAgent } from './gold-agent-runner';

/**
 * The `predictions` agent: applies each instance's `model_patch` from the job's predictions file
 * (`tasks.predictions`) instead of running a model, so predictions made elsewhere are graded as the
 * SWE-bench harness grades them. An instance without a prediction (or with an empty patch) is
 * graded unchanged; a patch that does not apply fails the task with `INVALID_ARGUMENT`.
 */
export function createPredictionsAgentRunner(): TaskAgentRunner {
  return {
    kind: 'predictions',
    validate(agent) {
      if (agent !== undefined) {
        throw invalidArgument(
          'spec.agent',
          'the predictions agent calls no model: remove spec.agent',
        );
      }
    },
    async run(ctx) {
      return applyPatchAgent(
        ctx,
        ctx.predictionPatch ?? '',
        `predictions ${ctx.taskId} model_patch`,
      );
    },
  };
}
