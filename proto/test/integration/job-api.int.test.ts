// The job API over a real grpc-js connection with the generated types on both sides.
import { credentials, Server, ServerCredentials, type ServiceError, status } from '@grpc/grpc-js';
import {
  type ArtifactChunk__Output,
  type JobEvent,
  type JobEvent__Output,
  type JobServiceClient,
  type JobServiceHandlers,
  JobState,
  type ListNodesResponse__Output,
  loadJobApi,
  type Node,
  type NodeServiceClient,
  type NodeServiceHandlers,
  type SubmitJobRequest__Output,
  type SubmitJobResponse__Output,
  toGrpcServiceError,
  TroupeError,
} from '@troupe/proto';

const CREATED_MS = 1_767_225_600_123;

/** The log a trivial server keeps for every job. */
function eventsOf(jobId: string): JobEvent[] {
  return [
    { sequence: 1, jobId, type: 'JOB_QUEUED', timeUnixMs: CREATED_MS, message: 'queued' },
    { sequence: 2, jobId, type: 'JOB_STARTED', timeUnixMs: CREATED_MS + 10 },
    {
      sequence: 3,
      jobId,
      type: 'TASK_GRADED',
      timeUnixMs: CREATED_MS + 20,
      taskId: 't1',
      payloadJson: JSON.stringify({ status: 'TASK_PASSED', score: 1 }),
    },
    { sequence: 4, jobId, type: 'JOB_FINISHED', timeUnixMs: CREATED_MS + 30, message: 'done ✓' },
  ];
}

describe('JobService and NodeService over a real connection', () => {
  const api = loadJobApi();
  let server: Server;
  let jobs: JobServiceClient;
  let nodes: NodeServiceClient;
  const received: SubmitJobRequest__Output[] = [];
  const artifact = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));

  beforeAll(async () => {
    server = new Server();
    const jobHandlers: Partial<JobServiceHandlers> = {
      SubmitJob: (call, callback) => {
        received.push(call.request);
        if (call.request.spec === '') {
          callback(toGrpcServiceError(new TroupeError('INVALID_ARGUMENT', '`spec`: is required')));
          return;
        }
        const jobId = `job-${received.length}`;
        callback(null, {
          jobId,
          job: {
            jobId,
            name: 'smoke',
            kind: 'issue-resolution',
            state: JobState.QUEUED,
            labels: { team: 'evals', tier: 'nightly' },
            createdUnixMs: CREATED_MS,
            progress: { total: 12, costUsd: 0 },
            specJson: '{"name":"smoke"}',
          },
        });
      },
      WatchJob: (call) => {
        const from = Math.max(1, Number(call.request.fromSequence));
        for (const event of eventsOf(call.request.jobId)) {
          if (Number(event.sequence) >= from) call.write(event);
        }
        call.end();
      },
      GetArtifact: (call) => {
        for (let offset = 0; offset < artifact.length; offset += 400) {
          call.write({
            data: artifact.subarray(offset, offset + 400),
            offset,
            totalSize: artifact.length,
            contentType: offset === 0 ? 'application/octet-stream' : '',
          });
        }
        call.end();
      },
    };
    const node: Node = {
      hostId: 'host-1',
      state: 'NODE_READY',
      kinds: ['sandbox', 'evaluator'],
      slots: { sandbox: 8, evaluator: 2 },
      used: { sandbox: 3 },
      cpu: 3.5,
      memMb: 16_384,
      backends: ['docker'],
      labels: { zone: 'a' },
      lastHeartbeatUnixMs: CREATED_MS,
    };
    const nodeHandlers: Partial<NodeServiceHandlers> = {
      ListNodes: (_call, callback) => callback(null, { nodes: [node] }),
    };
    // Methods left out answer UNIMPLEMENTED.
    server.addService(api.JobService.service, jobHandlers as JobServiceHandlers);
    server.addService(api.NodeService.service, nodeHandlers as NodeServiceHandlers);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    jobs = new api.JobService(`127.0.0.1:${port}`, credentials.createInsecure());
    nodes = new api.NodeService(`127.0.0.1:${port}`, credentials.createInsecure());
  });

  afterAll(() => {
    jobs?.close();
    nodes?.close();
    server?.forceShutdown();
  });

  const deadline = (): { deadline: number } => ({ deadline: Date.now() + 5_000 });

  function submit(spec: string): Promise<SubmitJobResponse__Output> {
    return new Promise((resolve, reject) =>
      jobs.submitJob(
        { spec, specFormat: 'SPEC_FORMAT_YAML', idempotencyKey: 'key-1' },
        deadline(),
        (err, res) => (err ? reject(err) : resolve(res!)),
      ),
    );
  }

  function collect<T>(stream: NodeJS.ReadableStream): Promise<T[]> {
    return new Promise((resolve, reject) => {
      const items: T[] = [];
      stream.on('data', (item: T) => items.push(item));
      stream.on('error', reject);
      stream.on('end', () => resolve(items));
    });
  }

  it('SubmitJob round-trips typed request and response fields', async () => {
    const res = await submit('name: smoke\ntasks: []\n');
    const request = received.at(-1)!;
    expect(request.spec).toBe('name: smoke\ntasks: []\n');
    expect(request.specFormat).toBe('SPEC_FORMAT_YAML');
    expect(request.idempotencyKey).toBe('key-1');
    expect(request.resumeJobId).toBe(''); // defaults filled in

    expect(res.jobId).toBe(`job-${received.length}`);
    const job = res.job!;
    expect(job.jobId).toBe(res.jobId);
    expect(job.state).toBe('QUEUED');
    expect(job.kind).toBe('issue-resolution');
    expect(job.labels).toEqual({ team: 'evals', tier: 'nightly' });
    expect(job.createdUnixMs).toBe(CREATED_MS);
    expect(typeof job.createdUnixMs).toBe('number');
    expect(job.startedUnixMs).toBeUndefined(); // optional: absent until started
    expect(job.finishedUnixMs).toBeUndefined();
    expect(job.reason).toBe('');
    expect(job.progress).toEqual({
      total: 12,
      done: 0,
      passed: 0,
      failed: 0,
      running: 0,
      costUsd: 0,
    });
    expect(JSON.parse(job.specJson)).toEqual({ name: 'smoke' });
  });

  it('SubmitJob errors carry the Troupe code', async () => {
    const err = (await submit('').catch((e: unknown) => e)) as ServiceError;
    expect(err.metadata.get('troupe-error-code')).toEqual(['INVALID_ARGUMENT']);
    expect(err.details).toBe('`spec`: is required');
  });

  it('WatchJob streams the events from the requested sequence, then ends', async () => {
    const all = await collect<JobEvent__Output>(
      jobs.watchJob({ jobId: 'job-9', fromSequence: 0 }, deadline()),
    );
    expect(all.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
    expect(all.map((e) => e.type)).toEqual([
      'JOB_QUEUED',
      'JOB_STARTED',
      'TASK_GRADED',
      'JOB_FINISHED',
    ]);
    expect(all[2]).toMatchObject({
      jobId: 'job-9',
      taskId: 't1',
      timeUnixMs: CREATED_MS + 20,
      message: '',
    });
    expect(JSON.parse(all[2]!.payloadJson)).toEqual({ status: 'TASK_PASSED', score: 1 });
    expect(all[3]!.message).toBe('done ✓');

    const resumed = await collect<JobEvent__Output>(
      jobs.watchJob({ jobId: 'job-9', fromSequence: 3 }, deadline()),
    );
    expect(resumed.map((e) => e.sequence)).toEqual([3, 4]);
  });

  it('GetArtifact streams bytes as Buffers in order', async () => {
    const chunks = await collect<ArtifactChunk__Output>(
      jobs.getArtifact({ jobId: 'job-1', path: 'report.bin' }, deadline()),
    );
    expect(chunks.map((c) => c.offset)).toEqual([0, 400, 800]);
    expect(chunks.every((c) => c.totalSize === artifact.length)).toBe(true);
    expect(chunks[0]!.contentType).toBe('application/octet-stream');
    expect(Buffer.concat(chunks.map((c) => c.data)).equals(artifact)).toBe(true);
  });

  it('ListNodes round-trips maps, repeated fields and numbers', async () => {
    const res = await new Promise<ListNodesResponse__Output>((resolve, reject) =>
      nodes.listNodes({}, deadline(), (err, r) => (err ? reject(err) : resolve(r!))),
    );
    expect(res.nodes).toEqual([
      {
        hostId: 'host-1',
        state: 'NODE_READY',
        kinds: ['sandbox', 'evaluator'],
        slots: { sandbox: 8, evaluator: 2 },
        used: { sandbox: 3 },
        cpu: 3.5,
        memMb: 16_384,
        backends: ['docker'],
        labels: { zone: 'a' },
        lastHeartbeatUnixMs: CREATED_MS,
      },
    ]);
  });

  it('an unimplemented method fails with UNIMPLEMENTED', async () => {
    const err = await new Promise<ServiceError>((resolve, reject) =>
      jobs.getJob({ jobId: 'x' }, deadline(), (e) => (e ? resolve(e) : reject(new Error('ok?')))),
    );
    expect(err.code).toBe(status.UNIMPLEMENTED);
  });
});
