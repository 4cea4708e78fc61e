import { randomUUID } from 'node:crypto';
import {
  type CallOptions,
  type ChannelCredentials,
  type ClientReadableStream,
  type ClientUnaryCall,
  credentials as grpcCredentials,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js';
import {
  type ArtifactChunk__Output,
  type CancelJobRequest,
  type CancelJobResponse__Output,
  type DeleteJobRequest,
  type DeleteJobResponse__Output,
  cancelledError,
  delay,
  type DrainNodeRequest,
  type DrainNodeResponse__Output,
  fromAbortSignal,
  type GetJobRequest,
  type GetBudgetRequest,
  type GetBudgetResponse__Output,
  type GetResultsRequest,
  type GetRolloutsRequest,
  type Job__Output,
  type JobEvent__Output,
  type JobResults__Output,
  type JobServiceClient,
  type JobState,
  type BudgetUpdate__Output,
  type JobsUpdate__Output,
  type ListJobsRequest,
  type ListJobsResponse__Output,
  type ListNodesRequest,
  type ListNodesResponse__Output,
  loadJobApi,
  type Node__Output,
  type NodeServiceClient,
  type NodesUpdate__Output,
  type RolloutRequest,
  type RolloutResponse__Output,
  type SubmitJobRequest,
  type SubmitJobResponse__Output,
  type TaskFileUpload__Output,
  TroupeError,
} from '@troupe/proto';
import { toClientError } from './client-error';

/** TLS settings of a {@link TroupeClient}. */
export interface ClientTlsOptions {
  /** PEM CA bundle that signed the server's certificate. @default the system roots */
  ca?: Buffer | string;
  /** PEM client certificate chain (mutual TLS). */
  certChain?: Buffer | string;
  /** PEM client private key (mutual TLS). */
  privateKey?: Buffer | string;
}

/** Retries of `UNAVAILABLE` (unreachable server, leader change). */
export interface ClientRetryOptions {
  /** Attempts in all, the first included. @default 5 */
  maxAttempts?: number;
  /** Backoff before the first retry; doubles each time. @default 200 */
  initialBackoffMs?: number;
  /** Cap of the backoff. @default 3000 */
  maxBackoffMs?: number;
}

/** What a caller passes to the {@link TroupeClient} constructor. */
export interface TroupeClientOptions {
  /** `host:port` of a coordinator's job API. */
  address: string;
  /** Bearer token (sent as `authorization: Bearer <token>`). @default none */
  token?: string;
  /** TLS; plaintext when absent. */
  tls?: ClientTlsOptions;
  /** Deadline of each unary call. @default 30000 */
  timeoutMs?: number;
  /**
   * Deadline of one watch stream; the watch reconnects from where it was when it passes, so it
   * only bounds how long one stream lives.
   * @default 600000
   */
  watchStreamMs?: number;
  retry?: ClientRetryOptions;
  /** Largest request sent (the server has its own limit). @default 64 MiB */
  maxSendMessageBytes?: number;
}

/** Options of one call. */
export interface CallOpts {
  /** Deadline of this call. @default the client's `timeoutMs` */
  timeoutMs?: number;
  /** Cancels the call. */
  signal?: AbortSignal;
}

/** Options of {@link TroupeClient.uploadTaskFile}. */
export interface UploadTaskFileOptions extends CallOpts {
  /** The file's name as the user knows it (`tasks.jsonl`): shown in errors and logs. */
  name: string;
  /** Called after each chunk is handed to the stream: bytes sent so far, of `total`. */
  onProgress?(sent: number, total: number): void;
}

/** Bytes per chunk of an upload (the server takes up to its message limit, 4 MiB by default). */
const UPLOAD_CHUNK_BYTES = 1024 * 1024;

/** Default deadline of a waiting {@link TroupeClient.rollout} call: one hour. */
export const DEFAULT_ROLLOUT_TIMEOUT_MS = 3_600_000;

/** A submission. */
export interface SubmitOptions extends CallOpts {
  /** Encoding of a text spec. @default 'auto' (YAML, which includes JSON) */
  format?: 'auto' | 'yaml' | 'json';
  /**
   * Makes the submission idempotent. @default a random key per `submitJob` call, so its own
   * retries never create a second job
   */
  idempotencyKey?: string;
  /** Re-run the unfinished tasks of this finished job. */
  resumeJobId?: string;
}

/** Filters of {@link TroupeClient.listJobs}. */
export interface ListJobsFilter {
  states?: JobState[];
  labels?: Record<string, string>;
  pageSize?: number;
  pageToken?: string;
}

/** Options of {@link TroupeClient.watch}. */
export interface WatchOptions {
  /** First sequence to deliver. @default 1 (the whole history) */
  fromSequence?: number;
  /**
   * Without `fromSequence`: start with the job's last `tail` events, not its whole history (a
   * reconnect still resumes after the last one delivered). @default 0 (the whole history)
   */
  tail?: number;
  /** Stops the watch (the iterator ends without an error). */
  signal?: AbortSignal;
  /** Reconnect (resuming after the last event) when the stream breaks. @default true */
  reconnect?: boolean;
  /** Consecutive failed reconnects before giving up. @default 10 */
  maxReconnects?: number;
  /** Called before each reconnect (for progress displays). */
  onReconnect?: (info: { attempt: number; fromSequence: number; error: TroupeError }) => void;
}

/**
 * Options of {@link TroupeClient.watchJobs}, {@link TroupeClient.watchNodes} and
 * {@link TroupeClient.watchBudget}.
 */
export interface WatchListOptions {
  /** Stops the watch (the iterator ends without an error). */
  signal?: AbortSignal;
  /**
   * Reopen the stream when it breaks; the first message of the new stream is a fresh snapshot
   * (`snapshot: true`). @default true
   */
  reconnect?: boolean;
  /** Consecutive failed reconnects before giving up. @default 10 */
  maxReconnects?: number;
  /** Called before each reconnect (for progress displays). */
  onReconnect?: (info: { attempt: number; error: TroupeError }) => void;
}

/** Filters of {@link TroupeClient.watchJobs}. */
export interface WatchJobsFilter {
  states?: JobState[];
  labels?: Record<string, string>;
  /** Size of the view: the newest matching jobs. @default 50 (the server's default) */
  limit?: number;
}

type Unary<Req, Res> = (
  arg: Req,
  metadata: Metadata,
  options: CallOptions,
  callback: (err: ServiceError | null, value?: Res) => void,
) => ClientUnaryCall;

/** Codes after which a broken watch is resumed. */
const RESUMABLE = new Set(['UNAVAILABLE', 'TIMEOUT', 'INTERNAL', 'CANCELLED']);

/**
 * Typed client of the Troupe job API (`troupe.v1.JobService`, `troupe.v1.NodeService`). Every
 * call has a deadline, is cancellable with an `AbortSignal`, and is retried with backoff on
 * `UNAVAILABLE`; errors are `TroupeError`s with the server's code, message and details.
 * {@link watch} is an async iterator that reconnects and resumes after the last event it
 * delivered, so a consumer sees every event exactly once.
 *
 * ```ts
 * const client = new TroupeClient({ address: '127.0.0.1:50051', token });
 * const { jobId } = await client.submitJob(yamlText);
 * for await (const e of client.watch(jobId)) console.log(e.sequence, e.type, e.message);
 * const results = await client.getResults(jobId);
 * client.close();
 * ```
 */
export class TroupeClient {
  private readonly jobs: JobServiceClient;
  private readonly nodes: NodeServiceClient;
  private readonly timeoutMs: number;
  private readonly watchStreamMs: number;
  private readonly retry: Required<ClientRetryOptions>;

  constructor(private readonly options: TroupeClientOptions) {
    if (!options.address) throw new TroupeError('INVALID_ARGUMENT', '`address`: is required');
    const api = loadJobApi();
    const creds: ChannelCredentials = options.tls
      ? grpcCredentials.createSsl(
          toBuffer(options.tls.ca),
          toBuffer(options.tls.privateKey),
          toBuffer(options.tls.certChain),
        )
      : grpcCredentials.createInsecure();
    const channelOptions = {
      'grpc.max_send_message_length': options.maxSendMessageBytes ?? 64 * 1024 * 1024,
      'grpc.max_receive_message_length': -1,
    };
    this.jobs = new api.JobService(options.address, creds, channelOptions);
    this.nodes = new api.NodeService(options.address, creds, channelOptions);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.watchStreamMs = options.watchStreamMs ?? 600_000;
    this.retry = {
      maxAttempts: options.retry?.maxAttempts ?? 5,
      initialBackoffMs: options.retry?.initialBackoffMs ?? 200,
      maxBackoffMs: options.retry?.maxBackoffMs ?? 3_000,
    };
  }

  /** The server address. */
  get address(): string {
    return this.options.address;
  }

  /** Closes the channels. */
  close(): void {
    this.jobs.close();
    this.nodes.close();
  }

  /** Validates, persists and queues a job; returns it (with its id). */
  async submitJob(
    spec: string | Record<string, unknown>,
    options: SubmitOptions = {},
  ): Promise<Job__Output> {
    const text = typeof spec === 'string' ? spec : JSON.stringify(spec);
    const format =
      typeof spec !== 'string' || options.format === 'json'
        ? 'SPEC_FORMAT_JSON'
        : options.format === 'yaml'
          ? 'SPEC_FORMAT_YAML'
          : 'SPEC_FORMAT_UNSPECIFIED';
    const res = await this.unary<SubmitJobRequest, SubmitJobResponse__Output>(
      this.jobs.SubmitJob.bind(this.jobs),
      {
        spec: text,
        specFormat: format,
        idempotencyKey: options.idempotencyKey ?? randomUUID(),
        resumeJobId: options.resumeJobId ?? '',
      },
      options,
    );
    if (!res.job) throw new TroupeError('INTERNAL', 'SubmitJob returned no job');
    return res.job;
  }

  /** One job; `NOT_FOUND` when there is none. */
  async getJob(jobId: string, options: CallOpts = {}): Promise<Job__Output> {
    return this.unary<GetJobRequest, Job__Output>(
      this.jobs.GetJob.bind(this.jobs),
      { jobId },
      options,
    );
  }

  /** One page of jobs, newest first. */
  async listJobs(
    filter: ListJobsFilter = {},
    options: CallOpts = {},
  ): Promise<ListJobsResponse__Output> {
    return this.unary<ListJobsRequest, ListJobsResponse__Output>(
      this.jobs.ListJobs.bind(this.jobs),
      {
        states: filter.states ?? [],
        labelSelector: filter.labels ?? {},
        pageSize: filter.pageSize ?? 0,
        pageToken: filter.pageToken ?? '',
      },
      options,
    );
  }

  /** Every job matching the filter, page after page. */
  async *listAllJobs(
    filter: Omit<ListJobsFilter, 'pageToken'> = {},
    options: CallOpts = {},
  ): AsyncGenerator<Job__Output> {
    let pageToken = '';
    do {
      const page = await this.listJobs({ ...filter, pageToken }, options);
      yield* page.jobs;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /** Requests cancellation; the job reaches CANCELLED asynchronously. */
  async cancelJob(jobId: string, reason = 'user', options: CallOpts = {}): Promise<Job__Output> {
    const res = await this.unary<CancelJobRequest, CancelJobResponse__Output>(
      this.jobs.CancelJob.bind(this.jobs),
      { jobId, reason },
      options,
    );
    if (!res.job) throw new TroupeError('INTERNAL', 'CancelJob returned no job');
    return res.job;
  }

  /**
   * Deletes a finished job and everything it stored (record, results, events, artifacts);
   * `BUSY` (not retryable) while it runs, `NOT_FOUND` when there is no such job.
   */
  async deleteJob(jobId: string, options: CallOpts = {}): Promise<DeleteJobResponse__Output> {
    return this.unary<DeleteJobRequest, DeleteJobResponse__Output>(
      this.jobs.DeleteJob.bind(this.jobs),
      { jobId },
      options,
    );
  }

  /**
   * Every task's result and the aggregate: {@link getResultsPage} page after page (the state and
   * aggregate are the last page's). `onPage` is told the tasks read so far, for progress.
   */
  async getResults(
    jobId: string,
    options: CallOpts & { pageSize?: number; onPage?: (read: number) => void } = {},
  ): Promise<JobResults__Output> {
    const { pageSize, onPage, ...call } = options;
    const tasks: JobResults__Output['tasks'] = [];
    let pageToken = '';
    for (;;) {
      const page = await this.getResultsPage(jobId, {
        ...call,
        ...(pageSize !== undefined ? { pageSize } : {}),
        pageToken,
      });
      tasks.push(...page.tasks);
      onPage?.(tasks.length);
      if (!page.nextPageToken) return { ...page, tasks };
      pageToken = page.nextPageToken;
    }
  }

  /**
   * One page of a job's task results, in plan order, with the aggregate (`GetResults`): `pageSize`
   * tasks (0: the server's default, 1,000; at most 5,000) from `pageToken` (the previous page's
   * `nextPageToken`; empty for the first) or, without one, from plan index `offset` (a page
   * anywhere in the plan, at the cost of that page alone).
   */
  async getResultsPage(
    jobId: string,
    options: CallOpts & { pageSize?: number; pageToken?: string; offset?: number } = {},
  ): Promise<JobResults__Output> {
    const { pageSize, pageToken, offset, ...call } = options;
    return this.unary<GetResultsRequest, JobResults__Output>(
      this.jobs.GetResults.bind(this.jobs),
      { jobId, pageSize: pageSize ?? 0, pageToken: pageToken ?? '', offset: offset ?? 0 },
      call,
    );
  }

  /**
   * The cluster's budget ledger (`GetBudget`): every scope with its limits, spend and reserved
   * amounts, and the reservations model calls in flight hold — or, with `scope`, that scope and
   * the reservations in its subtree (`NOT_FOUND` when the ledger has no such scope).
   */
  async getBudget(scope = '', options: CallOpts = {}): Promise<GetBudgetResponse__Output> {
    return this.unary<GetBudgetRequest, GetBudgetResponse__Output>(
      this.jobs.GetBudget.bind(this.jobs),
      { scope },
      options,
    );
  }

  /**
   * Runs RL rollouts (`Rollout`): the request's episodes as one `rollout` job, waited for unless
   * `noWait`, returned with trajectories, rewards and usage. The call's deadline (default
   * {@link DEFAULT_ROLLOUT_TIMEOUT_MS}) bounds the wait; when it passes the server cancels the
   * job. Retries after `UNAVAILABLE` reuse the request's `idempotencyKey` (a random one when
   * empty), so they wait for the same job instead of starting another.
   */
  async rollout(request: RolloutRequest, options: CallOpts = {}): Promise<RolloutResponse__Output> {
    return this.unary<RolloutRequest, RolloutResponse__Output>(
      this.jobs.Rollout.bind(this.jobs),
      { ...request, idempotencyKey: request.idempotencyKey || randomUUID() },
      {
        ...options,
        timeoutMs: options.timeoutMs ?? (request.noWait ? undefined : DEFAULT_ROLLOUT_TIMEOUT_MS),
      },
    );
  }

  /** The rollouts of a `rollout` job so far (`GetRollouts`). */
  async getRollouts(jobId: string, options: CallOpts = {}): Promise<RolloutResponse__Output> {
    return this.unary<GetRolloutsRequest, RolloutResponse__Output>(
      this.jobs.GetRollouts.bind(this.jobs),
      { jobId },
      options,
    );
  }

  /** Registered node agents. */
  async listNodes(options: CallOpts = {}): Promise<Node__Output[]> {
    const res = await this.unary<ListNodesRequest, ListNodesResponse__Output>(
      this.nodes.ListNodes.bind(this.nodes),
      {},
      options,
    );
    return res.nodes;
  }

  /** Stops placing new work on a node. */
  async drainNode(hostId: string, reason = '', options: CallOpts = {}): Promise<Node__Output> {
    const res = await this.unary<DrainNodeRequest, DrainNodeResponse__Output>(
      this.nodes.DrainNode.bind(this.nodes),
      { hostId, reason },
      options,
    );
    if (!res.node) throw new TroupeError('INTERNAL', 'DrainNode returned no node');
    return res.node;
  }

  /**
   * The job's events from `fromSequence`: its history first, then live events until
   * JOB_FINISHED. A broken stream is reopened after the last delivered sequence (no gaps, no
   * duplicates); the iterator ends quietly when `signal` aborts.
   */
  async *watch(jobId: string, options: WatchOptions = {}): AsyncGenerator<JobEvent__Output> {
    let next = Math.max(1, options.fromSequence ?? 1);
    let tail = options.tail ?? 0;
    let failures = 0;
    // Type of the last event delivered (across reconnections).
    let lastType = '';
    const maxReconnects = options.maxReconnects ?? 10;
    for (;;) {
      if (options.signal?.aborted) return;
      const streamDeadline = Date.now() + this.watchStreamMs;
      const stream = this.jobs.WatchJob({ jobId, fromSequence: next, tail }, this.metadata(), {
        deadline: streamDeadline,
      });
      try {
        for await (const e of abortable(stream, options.signal)) {
          const event = e as JobEvent__Output;
          // Anything at or before what we delivered is a replay: skip it.
          if (event.sequence < next) continue;
          next = event.sequence + 1;
          tail = 0;
          failures = 0;
          lastType = event.type;
          yield event;
        }
        if (options.signal?.aborted) return;
        // The server ends the stream after the job's last JOB_FINISHED; any other end (its
        // shutdown) is resumed.
        if (lastType === 'JOB_FINISHED') return;
        throw new TroupeError('UNAVAILABLE', 'the watch stream ended early');
      } catch (err) {
        if (options.signal?.aborted) return;
        const e = err instanceof TroupeError ? err : toClientError(err, this.address);
        // The stream's own deadline (watchStreamMs) only bounds how long one stream lives: a
        // long job outlives it by design, so it is reopened at once, not reported as a failure.
        if (e.code === 'TIMEOUT' && Date.now() >= streamDeadline && (options.reconnect ?? true))
          continue;
        const resumable =
          (options.reconnect ?? true) && RESUMABLE.has(e.code) && failures < maxReconnects;
        if (!resumable) throw e;
        failures++;
        options.onReconnect?.({ attempt: failures, fromSequence: next, error: e });
        await sleep(this.backoff(failures), options.signal);
      } finally {
        stream.cancel();
      }
    }
  }

  /**
   * The job list, live (WatchJobs): a snapshot of the `limit` newest jobs matching the filter,
   * then each change of that view (jobs that entered or changed, ids that left). A broken stream
   * is reopened and starts again with a snapshot, so a consumer that replaces its view on every
   * `snapshot: true` message never drifts. The iterator ends quietly when `signal` aborts.
   */
  watchJobs(
    filter: WatchJobsFilter = {},
    options: WatchListOptions = {},
  ): AsyncGenerator<JobsUpdate__Output> {
    return this.follow<JobsUpdate__Output>(
      (deadline) =>
        this.jobs.WatchJobs(
          {
            states: filter.states ?? [],
            labelSelector: filter.labels ?? {},
            limit: filter.limit ?? 0,
          },
          this.metadata(),
          { deadline },
        ),
      options,
    );
  }

  /**
   * The node list, live (WatchNodes): a snapshot of every registered node agent, then each
   * change (nodes that registered or changed, host ids that left), reopened with a fresh snapshot
   * when the stream breaks (a leader change, for one). Ends quietly when `signal` aborts.
   */
  watchNodes(options: WatchListOptions = {}): AsyncGenerator<NodesUpdate__Output> {
    return this.follow<NodesUpdate__Output>(
      (deadline) => this.nodes.WatchNodes({}, this.metadata(), { deadline }),
      options,
    );
  }

  /**
   * The budget, live (WatchBudget): a snapshot of every scope (the cluster's ledger and the jobs'
   * own ledgers holding searches' scopes, each with its `ledger`) and the open reservations — what
   * {@link getBudget} returns — then each change as the ledgers commit it: scopes that changed,
   * scopes removed, reservations opened and closed. Reopened with a fresh snapshot when the stream
   * breaks. Ends quietly when `signal` aborts.
   * @param scope - only this scope and the reservations of its subtree (`NOT_FOUND` when no
   * ledger holds it); empty for every scope
   */
  watchBudget(scope = '', options: WatchListOptions = {}): AsyncGenerator<BudgetUpdate__Output> {
    return this.follow<BudgetUpdate__Output>(
      (deadline) => this.jobs.WatchBudget({ scope }, this.metadata(), { deadline }),
      options,
    );
  }

  /**
   * Messages of a list stream that has no end of its own, reopened when it breaks or when its
   * `watchStreamMs` deadline passes (each new stream starts with a snapshot).
   */
  private async *follow<T>(
    open: (deadline: number) => ClientReadableStream<T>,
    options: WatchListOptions,
  ): AsyncGenerator<T> {
    let failures = 0;
    const maxReconnects = options.maxReconnects ?? 10;
    const reconnect = options.reconnect ?? true;
    for (;;) {
      if (options.signal?.aborted) return;
      const streamDeadline = Date.now() + this.watchStreamMs;
      const stream = open(streamDeadline);
      try {
        for await (const m of abortable(stream, options.signal)) {
          failures = 0;
          yield m as T;
        }
        if (options.signal?.aborted) return;
        throw new TroupeError('UNAVAILABLE', 'the watch stream ended early');
      } catch (err) {
        if (options.signal?.aborted) return;
        const e = err instanceof TroupeError ? err : toClientError(err, this.address);
        if (e.code === 'TIMEOUT' && Date.now() >= streamDeadline && reconnect) continue;
        if (!reconnect || !RESUMABLE.has(e.code) || failures >= maxReconnects) throw e;
        failures++;
        options.onReconnect?.({ attempt: failures, error: e });
        await sleep(this.backoff(failures), options.signal);
      } finally {
        stream.cancel();
      }
    }
  }

  /** The chunks of an artifact, in order. */
  async *getArtifact(
    jobId: string,
    path: string,
    options: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): AsyncGenerator<ArtifactChunk__Output> {
    const stream = this.jobs.GetArtifact({ jobId, path }, this.metadata(), {
      deadline: Date.now() + (options.timeoutMs ?? 10 * this.timeoutMs),
    });
    try {
      for await (const chunk of abortable(stream, options.signal)) {
        yield chunk as ArtifactChunk__Output;
      }
    } catch (err) {
      throw err instanceof TroupeError ? err : toClientError(err, this.address);
    } finally {
      stream.cancel();
    }
  }

  /**
   * Uploads a task file (JSONL, one task a line) for a spec to name in `tasks: {file, upload}`,
   * and returns the upload's reference. Sent in 1 MiB chunks; the same bytes give the same
   * reference, so a retry after `UNAVAILABLE` is safe and is made like a unary call's.
   */
  async uploadTaskFile(
    data: Uint8Array,
    options: UploadTaskFileOptions,
  ): Promise<TaskFileUpload__Output> {
    return this.retrying((deadline) => this.uploadOnce(data, options, deadline), {
      ...options,
      timeoutMs: options.timeoutMs ?? 10 * this.timeoutMs,
    });
  }

  private uploadOnce(
    data: Uint8Array,
    options: UploadTaskFileOptions,
    deadline: number,
  ): Promise<TaskFileUpload__Output> {
    const { signal } = options;
    return new Promise<TaskFileUpload__Output>((resolve, reject) => {
      let settled = false;
      const settle = (err: Error | null | undefined, value?: TaskFileUpload__Output) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else if (value === undefined) reject(new TroupeError('INTERNAL', 'empty reply'));
        else resolve(value);
      };
      const call = this.jobs.UploadTaskFile(this.metadata(), { deadline }, (err, value) =>
        settle(err, value),
      );
      const onAbort = () => {
        call.cancel();
        settle(signal ? fromAbortSignal(signal) : cancelledError('user'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      void (async () => {
        const size = data.byteLength;
        for (let offset = 0; offset === 0 || offset < size; offset += UPLOAD_CHUNK_BYTES) {
          if (settled) return;
          const end = Math.min(size, offset + UPLOAD_CHUNK_BYTES);
          const chunk = Buffer.from(data.buffer, data.byteOffset + offset, end - offset);
          const more = call.write(
            offset === 0 ? { data: chunk, name: options.name } : { data: chunk },
          );
          options.onProgress?.(end, size);
          if (!more) await new Promise<void>((r) => call.once('drain', r).once('error', () => r()));
        }
        call.end();
      })().catch((err: unknown) => {
        call.cancel();
        settle(err instanceof Error ? err : new TroupeError('INTERNAL', String(err)));
      });
    });
  }

  /** A whole artifact in memory, with its content type. */
  async downloadArtifact(
    jobId: string,
    path: string,
    options: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<{ data: Buffer; contentType: string }> {
    const parts: Buffer[] = [];
    let contentType = '';
    for await (const c of this.getArtifact(jobId, path, options)) {
      if (c.contentType) contentType = c.contentType;
      parts.push(c.data);
    }
    return { data: Buffer.concat(parts), contentType };
  }

  private metadata(): Metadata {
    const md = new Metadata();
    if (this.options.token) md.set('authorization', `Bearer ${this.options.token}`);
    return md;
  }

  private backoff(attempt: number): number {
    const base = Math.min(
      this.retry.maxBackoffMs,
      this.retry.initialBackoffMs * 2 ** Math.max(0, attempt - 1),
    );
    return base / 2 + Math.random() * (base / 2);
  }

  private async unary<Req, Res>(
    method: Unary<Req, Res>,
    request: Req,
    options: CallOpts,
  ): Promise<Res> {
    return this.retrying(
      (deadline) => this.once(method, request, deadline, options.signal),
      options,
    );
  }

  /** Makes a call (`attempt`) until it succeeds, retrying `UNAVAILABLE` with backoff. */
  private async retrying<Res>(
    attempt: (deadline: number) => Promise<Res>,
    options: CallOpts,
  ): Promise<Res> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    for (let n = 1; ; n++) {
      if (options.signal?.aborted) throw fromAbortSignal(options.signal);
      try {
        return await attempt(deadline);
      } catch (err) {
        const e = toClientError(err, this.address);
        const wait = this.backoff(n);
        const retry =
          e.code === 'UNAVAILABLE' &&
          n < this.retry.maxAttempts &&
          Date.now() + wait < deadline &&
          !options.signal?.aborted;
        if (!retry) throw e;
        await sleep(wait, options.signal);
      }
    }
  }

  private once<Req, Res>(
    method: Unary<Req, Res>,
    request: Req,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const call = method(request, this.metadata(), { deadline }, (err, value) => {
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else if (value === undefined) reject(new TroupeError('INTERNAL', 'empty reply'));
        else resolve(value);
      });
      const onAbort = () => {
        call.cancel();
        reject(signal ? fromAbortSignal(signal) : cancelledError('user'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function toBuffer(v: Buffer | string | undefined): Buffer | null {
  if (v === undefined) return null;
  return typeof v === 'string' ? Buffer.from(v) : v;
}

/** The stream's messages; ends (without error) when `signal` aborts. */
async function* abortable(
  stream: ClientReadableStream<unknown>,
  signal: AbortSignal | undefined,
): AsyncGenerator<unknown> {
  if (!signal) {
    yield* stream;
    return;
  }
  const onAbort = () => stream.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const m of stream) {
      if (signal.aborted) return;
      yield m;
    }
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Waits `ms` for a retry; an abort ends the wait early (the caller then sees the aborted signal). */
async function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  await delay(ms, signal).catch(() => undefined);
}
