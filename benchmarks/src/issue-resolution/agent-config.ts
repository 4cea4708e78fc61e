import { type JobSpec } from '@troupe/coordinator';

/** `spec.agent` of a job (model, template, limits), as the coordinator validated it. */
export type AgentConfig = NonNullable<JobSpec['agent']>;
