import { invalidArgument } from '@troupe/proto';
import { type TaskAgentRunner } from './task-agent-runner';

/** The `none` agent: changes nothing (a baseline: every task of a sound suite must fail). */
export function createNoneAgentRunner(): TaskAgentRunner {
  return {
    kind: 'none',
    validate(agent) {
      if (agent !== undefined) {
        throw invalidArgument('spec.agent', 'the none agent calls no model: remove spec.agent');
      }
    },
    run() {
      return Promise.resolve({
        stopReason: 'finished',
        finalText: '',
        steps: 0,
        usage: { promptTokens: 0, completionTokens: 0 },
        costUsd: 0,
      });
    },
  };
}
