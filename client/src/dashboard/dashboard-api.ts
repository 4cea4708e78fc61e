import { type TroupeClient } from '../troupe-client';

/**
 * What the dashboard reads and does through the job API: a {@link TroupeClient} satisfies it.
 * Kept narrow so that the dashboard works against any cluster it can reach over gRPC, and never
 * against a coordinator's internals.
 */
export type DashboardApi = Pick<
  TroupeClient,
  | 'listJobs'
  | 'getJob'
  | 'getResults'
  | 'getResultsPage'
  | 'getBudget'
  | 'watch'
  | 'getArtifact'
  | 'downloadArtifact'
  | 'listNodes'
  | 'watchJobs'
  | 'watchNodes'
  | 'watchBudget'
  | 'cancelJob'
  | 'drainNode'
>;
