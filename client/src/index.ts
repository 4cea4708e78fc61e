/** @packageDocumentation @troupe/client: gRPC client SDK and the troupe CLI. */
export { toClientError } from './client-error';
export { type DashboardApi } from './dashboard/dashboard-api';
export { DashboardServer, type DashboardServerOptions } from './dashboard/dashboard-server';
export {
  DEFAULT_ROLLOUT_TIMEOUT_MS,
  TroupeClient,
  type CallOpts,
  type UploadTaskFileOptions,
  type ClientRetryOptions,
  type ClientTlsOptions,
  type ListJobsFilter,
  type SubmitOptions,
  type TroupeClientOptions,
  type WatchJobsFilter,
  type WatchListOptions,
  type WatchOptions,
} from './troupe-client';
