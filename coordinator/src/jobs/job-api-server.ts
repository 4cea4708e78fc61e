import { readFileSync } from 'node:fs';
import {
  type handleClientStreamingCall,
  type handleServerStreamingCall,
  type handleUnaryCall,
  Server,
  ServerCredentials,
  type ServiceDefinition,
  type ServerUnaryCall,
} from '@grpc/grpc-js';
import { type Logger, noopLogger } from '@troupe/actors';
import {
  type ArtifactChunk,
  type BudgetUpdate,
  cancelledError,
  type CancelJobRequest__Output,
  type CancelJobResponse,
  type DeleteJobRequest__Output,
  type DeleteJobResponse,
  type DrainNodeRequest__Output,
  type DrainNodeResponse,
  type GetArtifactRequest__Output,
  type GetBudgetRequest__Output,
  type GetBudgetResponse,
  type GetJobRequest__Output,
  type GetResultsRequest__Output,
  type GetRolloutsRequest__Output,
  invalidArgument,
  type Job,
  type JobEvent,
  type JobResults,
  type JobServiceHandlers,
  type JobsUpdate,
  type ListJobsRequest__Output,
  type ListJobsResponse,
  type ListNodesRequest__Output,
  type ListNodesResponse,
  loadJobApi,
  type NodeServiceHandlers,
  type NodesUpdate,
  type RolloutRequest__Output,
  type RolloutResponse,
  type SubmitJobRequest__Output,
  type SubmitJobResponse,
  type TaskFileChunk__Output,
  type TaskFileUpload,
  timeoutError,
  toGrpcServiceError,
  toTroupeError,
  TroupeError,
  type WatchBudgetRequest__Output,
  type WatchJobRequest__Output,
  type WatchJobsRequest__Output,
  type WatchNodesRequest__Output,
} from '@troupe/proto';
import { BearerAuth } from './bearer-auth';
import { type LedgerStates } from '../budget/ledger-state-feed';
import { snapshot as ledgerSnapshot } from '../budget/ledger-state';
import { type BudgetSource, toWireBudget } from './budget-wire';
import { watchBudget } from './budget-watch';
import { type GrpcConfig } from './grpc-config';
import { type JobManager } from './job-manager';
import { toWireEvent, toWireJob, toWireNode, toWireResults } from './job-wire';
import { watchJobList } from './job-list-watch';
import { type NodeSource, watchNodeList } from './node-list-watch';
import { RolloutService } from './rollout-service';

export type { NodeSource } from './node-list-watch';

/** What a caller passes to {@link JobApiServer.start}. */
export interface JobApiServerOptions {
  jobs: JobManager;
  /** The host registry, when this coordinator leads; undefined otherwise. */
  nodes: () => NodeSource | undefined;
  /** The cluster's budget ledger, read by GetBudget; without it GetBudget is UNAVAILABLE. */
  budget?: BudgetSource;
  /**
   * The persisted states of every budget ledger: GetBudget lists the jobs' own ledgers (a search's
   * scopes) from it, and WatchBudget follows it; without it GetBudget lists the cluster's ledger
   * alone and WatchBudget is UNAVAILABLE.
   */
  ledgers?: LedgerStates;
  config: GrpcConfig;
  logger?: Logger;
}

/** What {@link JobApiServer} reads of a call of any shape (unary, streaming either way). */
interface CallSurface {
  once(event: 'cancelled', listener: () => void): unknown;
  removeListener(event: 'cancelled', listener: () => void): unknown;
  getDeadline(): ReturnType<ServerUnaryCall<unknown, unknown>['getDeadline']>;
  getPath(): string;
}

/** Largest data chunk of GetArtifact (the proto promises at most 64 KiB). */
const ARTIFACT_CHUNK_BYTES = 64 * 1024;

/**
 * The gRPC server of the job API: `troupe.v1.JobService` and `troupe.v1.NodeService` over the
 * {@link JobManager} and the host registry. Every call is authenticated with the bearer token
 * (constant-time compare) unless the config allows unauthenticated access; requests larger than
 * `maxMessageBytes` are refused by grpc-js before they are decoded; errors leave through
 * `toGrpcServiceError`; a call's deadline and cancellation become the `AbortSignal` of the work.
 */
export class JobApiServer {
  private constructor(
    private readonly server: Server,
    /** The bound port (useful with port 0). */
    readonly port: number,
    private readonly stopWatches: () => void,
  ) {}

  /** Builds the server, binds `host:port` and starts serving. */
  static async start(options: JobApiServerOptions): Promise<JobApiServer> {
    const { config, jobs } = options;
    const log = (options.logger ?? noopLogger).child({ component: 'job-api' });
    const auth = BearerAuth.fromConfig(config);
    const api = loadJobApi();
    const rollouts = new RolloutService({
      jobs,
      ...(options.logger ? { logger: options.logger } : {}),
    });
    const server = new Server({
      'grpc.max_receive_message_length': config.maxMessageBytes,
      'grpc.max_send_message_length': 64 * 1024 * 1024,
    });
    // Aborts every open call (watch streams) when the server stops.
    const open = new Set<AbortController>();

    const withCall = (call: CallSurface): { signal: AbortSignal; done: () => void } => {
      const ctl = new AbortController();
      open.add(ctl);
      const onCancel = () => ctl.abort(cancelledError('the client cancelled the call'));
      call.once('cancelled', onCancel);
      const deadline = call.getDeadline();
      const deadlineMs = deadline instanceof Date ? deadline.getTime() : Number(deadline);
      let timer: NodeJS.Timeout | undefined;
      if (Number.isFinite(deadlineMs)) {
        const ms = Math.max(0, deadlineMs - Date.now());
        const onTimeout = timeoutError(`${call.getPath()}`, ms);
        timer = setTimeout(() => ctl.abort(onTimeout), ms);
      }
      return {
        signal: ctl.signal,
        done: () => {
          clearTimeout(timer);
          call.removeListener('cancelled', onCancel);
          open.delete(ctl);
        },
      };
    };

    const unary =
      <Req, Res>(
        name: string,
        fn: (req: Req, signal: AbortSignal) => Promise<Res>,
      ): handleUnaryCall<Req, Res> =>
      (call, callback) => {
        const { signal, done } = withCall(call);
        void (async () => {
          try {
            auth.check(call.metadata);
            const res = await fn(decoded(name, call.request), signal);
            callback(null, res);
          } catch (err) {
            const e = toTroupeError(err);
            if (e.code === 'INTERNAL') log.error({ err, method: name }, 'job API call failed');
            else log.debug({ err, method: name }, 'job API call refused');
            callback(toGrpcServiceError(e));
          } finally {
            done();
          }
        })();
      };

    const stream =
      <Req, Res>(
        name: string,
        fn: (req: Req, signal: AbortSignal, write: (m: Res) => Promise<void>) => Promise<void>,
      ): handleServerStreamingCall<Req, Res> =>
      (call) => {
        const { signal, done } = withCall(call);
        const write = async (m: Res): Promise<void> => {
          if (signal.aborted) throw toTroupeError(signal.reason);
          if (!call.write(m)) {
            await new Promise<void>((resolve) => {
              const finish = () => {
                call.removeListener('drain', finish);
                signal.removeEventListener('abort', finish);
                resolve();
              };
              call.once('drain', finish);
              signal.addEventListener('abort', finish, { once: true });
            });
          }
        };
        void (async () => {
          try {
            auth.check(call.metadata);
            await fn(decoded(name, call.request), signal, write);
            if (!call.cancelled) call.end();
          } catch (err) {
            const e = toTroupeError(err);
            if (e.code === 'INTERNAL') log.error({ err, method: name }, 'job API stream failed');
            if (!call.cancelled) call.emit('error', toGrpcServiceError(e));
          } finally {
            done();
          }
        })();
      };

    const upload =
      <Req, Res>(
        name: string,
        fn: (requests: AsyncIterable<Req>, signal: AbortSignal) => Promise<Res>,
      ): handleClientStreamingCall<Req, Res> =>
      (call, callback) => {
        const { signal, done } = withCall(call);
        const requests = async function* (): AsyncGenerator<Req> {
          for await (const req of call as AsyncIterable<Req>) {
            if (signal.aborted) throw toTroupeError(signal.reason);
            yield decoded(name, req);
          }
        };
        void (async () => {
          try {
            auth.check(call.metadata);
            callback(null, await fn(requests(), signal));
          } catch (err) {
            const e = toTroupeError(err);
            if (e.code === 'INTERNAL') log.error({ err, method: name }, 'job API upload failed');
            else log.debug({ err, method: name }, 'job API upload refused');
            callback(toGrpcServiceError(e));
          } finally {
            done();
          }
        })();
      };

    const jobHandlers: JobServiceHandlers = {
      SubmitJob: unary<SubmitJobRequest__Output, SubmitJobResponse>(
        'SubmitJob',
        async (req, signal) => {
          const format =
            req.specFormat === 'SPEC_FORMAT_JSON'
              ? 'json'
              : req.specFormat === 'SPEC_FORMAT_YAML'
                ? 'yaml'
                : 'auto';
          const record = await jobs.submit({
            spec: req.spec,
            format,
            ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
            ...(req.resumeJobId ? { resumeJobId: req.resumeJobId } : {}),
            signal,
          });
          return { jobId: record.jobId, job: toWireJob(record) };
        },
      ),
      UploadTaskFile: upload<TaskFileChunk__Output, TaskFileUpload>(
        'UploadTaskFile',
        async (chunks) => {
          const stored = await jobs.uploadTaskFile(chunks);
          return { upload: stored.upload, sizeBytes: stored.sizeBytes, lines: stored.lines };
        },
      ),
      GetJob: unary<GetJobRequest__Output, Job>('GetJob', async (req) =>
        toWireJob(await jobs.get(requireJobId(req.jobId))),
      ),
      ListJobs: unary<ListJobsRequest__Output, ListJobsResponse>('ListJobs', async (req) => {
        const { jobs: list, nextPageToken } = await jobs.list({
          states: req.states.filter((s) => s !== 'JOB_STATE_UNSPECIFIED'),
          labels: req.labelSelector,
          pageSize: req.pageSize,
          pageToken: req.pageToken,
        });
        return { jobs: list.map(toWireJob), nextPageToken };
      }),
      WatchJob: stream<WatchJobRequest__Output, JobEvent>(
        'WatchJob',
        async (req, signal, write) => {
          const events = await jobs.watch(requireJobId(req.jobId), {
            fromSequence: req.fromSequence,
            tail: req.tail,
            signal,
          });
          for await (const e of events) await write(toWireEvent(e));
        },
      ),
      WatchJobs: stream<WatchJobsRequest__Output, JobsUpdate>(
        'WatchJobs',
        async (req, signal, write) => {
          const changes = watchJobList(jobs.store, {
            states: req.states.filter((s) => s !== 'JOB_STATE_UNSPECIFIED'),
            labels: req.labelSelector,
            limit: req.limit,
            signal,
          });
          for await (const c of changes) {
            await write({
              snapshot: c.snapshot,
              jobs: c.jobs.map(toWireJob),
              removedJobIds: c.removed,
              atUnixMs: Date.now(),
            });
          }
        },
      ),
      CancelJob: unary<CancelJobRequest__Output, CancelJobResponse>(
        'CancelJob',
        async (req, signal) => ({
          job: toWireJob(await jobs.cancel(requireJobId(req.jobId), req.reason || 'user', signal)),
        }),
      ),
      DeleteJob: unary<DeleteJobRequest__Output, DeleteJobResponse>('DeleteJob', async (req) => {
        const deleted = await jobs.delete(requireJobId(req.jobId));
        return {
          deletedKeys: deleted.keys,
          deletedEvents: deleted.events,
          deletedArtifacts: deleted.artifacts,
        };
      }),
      GetResults: unary<GetResultsRequest__Output, JobResults>('GetResults', async (req, signal) =>
        toWireResults(
          await jobs.results(requireJobId(req.jobId), {
            signal,
            pageSize: req.pageSize,
            pageToken: req.pageToken,
            offset: req.offset,
          }),
        ),
      ),
      Rollout: unary<RolloutRequest__Output, RolloutResponse>('Rollout', (req, signal) =>
        rollouts.rollout(req, signal),
      ),
      GetRollouts: unary<GetRolloutsRequest__Output, RolloutResponse>(
        'GetRollouts',
        (req, signal) => rollouts.get(requireJobId(req.jobId), signal),
      ),
      GetBudget: unary<GetBudgetRequest__Output, GetBudgetResponse>(
        'GetBudget',
        async (req, signal) => {
          if (!options.budget) {
            throw new TroupeError('UNAVAILABLE', 'this coordinator serves no budget ledger');
          }
          const [cluster, listed] = await Promise.all([
            options.budget.snapshot({ signal }),
            options.ledgers?.list(),
          ]);
          // The jobs' own ledgers as persisted (asking each would activate every job's ledger).
          const own = [...(listed?.ledgers.entries() ?? [])]
            .filter(([root]) => root !== 'cluster')
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([, state]) => ledgerSnapshot(state, cluster.atMs).reply);
          return toWireBudget([cluster, ...own], req.scope);
        },
      ),
      WatchBudget: stream<WatchBudgetRequest__Output, BudgetUpdate>(
        'WatchBudget',
        async (req, signal, write) => {
          if (!options.ledgers) {
            throw new TroupeError('UNAVAILABLE', 'this coordinator serves no budget ledger');
          }
          for await (const c of watchBudget(options.ledgers, { scope: req.scope, signal })) {
            await write({
              snapshot: c.snapshot,
              scopes: c.scopes,
              removedScopes: c.removedScopes,
              opened: c.opened,
              closed: c.closed,
              atUnixMs: c.atUnixMs,
            });
          }
        },
      ),
      GetArtifact: stream<GetArtifactRequest__Output, ArtifactChunk>(
        'GetArtifact',
        async (req, signal, write) => {
          if (!req.path) throw invalidArgument('path', 'is required');
          const reader = await jobs.artifact(requireJobId(req.jobId), req.path);
          let offset = 0;
          let first = true;
          const send = async (data: Uint8Array) => {
            await write({
              data: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
              offset,
              totalSize: reader.size,
              ...(first ? { contentType: reader.contentType } : {}),
            });
            first = false;
            offset += data.byteLength;
          };
          for await (const chunk of reader.chunks) {
            if (signal.aborted) throw toTroupeError(signal.reason);
            for (let i = 0; i < chunk.byteLength; i += ARTIFACT_CHUNK_BYTES) {
              await send(chunk.subarray(i, Math.min(chunk.byteLength, i + ARTIFACT_CHUNK_BYTES)));
            }
          }
          if (first) await send(new Uint8Array(0)); // an empty artifact still gets its metadata
        },
      ),
    };

    const leaderNodes = (): NodeSource => {
      const nodes = options.nodes();
      if (!nodes) {
        throw new TroupeError(
          'UNAVAILABLE',
          'this coordinator is not the leader; node information is served by the leader',
        );
      }
      return nodes;
    };
    const nodeHandlers: NodeServiceHandlers = {
      ListNodes: unary<ListNodesRequest__Output, ListNodesResponse>('ListNodes', async () => ({
        nodes: leaderNodes()
          .list()
          .sort((a, b) => (a.info.hostId < b.info.hostId ? -1 : 1))
          .map(toWireNode),
      })),
      WatchNodes: stream<WatchNodesRequest__Output, NodesUpdate>(
        'WatchNodes',
        async (_req, signal, write) => {
          for await (const c of watchNodeList({ source: options.nodes, signal })) {
            await write({
              snapshot: c.snapshot,
              nodes: c.nodes.map(toWireNode),
              removedHostIds: c.removed,
              atUnixMs: Date.now(),
            });
          }
        },
      ),
      DrainNode: unary<DrainNodeRequest__Output, DrainNodeResponse>('DrainNode', async (req) => {
        if (!req.hostId) throw invalidArgument('host_id', 'is required');
        const node = await leaderNodes().drain(req.hostId, req.reason || 'drained by operator');
        return { node: toWireNode(node) };
      }),
    };

    server.addService(tolerantService(api.JobService.service), jobHandlers);
    server.addService(tolerantService(api.NodeService.service), nodeHandlers);
    const credentials = config.tls
      ? ServerCredentials.createSsl(
          config.tls.clientCaFile ? readFileSync(config.tls.clientCaFile) : null,
          [
            {
              cert_chain: readFileSync(config.tls.certFile),
              private_key: readFileSync(config.tls.keyFile),
            },
          ],
          config.tls.clientCaFile !== undefined,
        )
      : ServerCredentials.createInsecure();
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(`${config.host}:${config.port}`, credentials, (err, p) =>
        err
          ? reject(
              new TroupeError(
                'UNAVAILABLE',
                `cannot bind the job API on ${config.host}:${config.port}: ${err.message}`,
                { cause: err },
              ),
            )
          : resolve(p),
      );
    });
    log.info(
      { host: config.host, port, tls: config.tls !== undefined, auth: auth.enabled },
      'job API listening',
    );
    return new JobApiServer(server, port, () => {
      for (const c of open) c.abort(cancelledError('shutdown'));
    });
  }

  /** Stops taking calls, ends open streams, and waits up to `graceMs` for calls to finish. */
  async stop(graceMs = 5_000): Promise<void> {
    this.stopWatches();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

function requireJobId(jobId: string): string {
  if (!jobId) throw invalidArgument('job_id', 'is required');
  return jobId;
}

/** What a tolerant deserializer returns for bytes that are not the method's request message. */
const UNDECODABLE = Symbol('undecodable request');

/**
 * `definition` with request deserializers that never throw: grpc-js answers a throwing one with
 * `INTERNAL: Error deserializing request`, which blames the server for a client's bad bytes. An
 * undecodable request reaches the handler as a marker, and {@link decoded} refuses it as
 * `INVALID_ARGUMENT`.
 */
function tolerantService(definition: ServiceDefinition): ServiceDefinition {
  return Object.fromEntries(
    Object.entries(definition).map(([name, method]) => [
      name,
      {
        ...method,
        requestDeserialize: (bytes: Buffer): unknown => {
          try {
            return method.requestDeserialize(bytes);
          } catch (err) {
            return { [UNDECODABLE]: (err as Error).message };
          }
        },
      },
    ]),
  );
}

/** The request, or `INVALID_ARGUMENT` (field `request`) when its bytes did not decode. */
function decoded<Req>(method: string, request: Req): Req {
  if (typeof request === 'object' && request !== null && UNDECODABLE in request) {
    throw invalidArgument(
      'request',
      `is not a valid ${method} request message (protobuf: ${String((request as Record<symbol, unknown>)[UNDECODABLE])})`,
    );
  }
  return request;
}
