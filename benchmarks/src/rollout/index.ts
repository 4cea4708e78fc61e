/** @packageDocumentation The `rollout` job driver: RL rollouts against a trainer's policy endpoint. */
export {
  createRolloutAgentRunner,
  ROLLOUT_AGENT_KIND,
  rolloutConfigOf,
} from './rollout-agent-runner';
export {
  createRolloutDriver,
  ROLLOUT_UNAVAILABLE,
  type RolloutDriverOptions,
} from './rollout-driver';
