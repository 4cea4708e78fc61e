import {
  type Client,
  type ClientReadableStream,
  credentials,
  Metadata,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { Coordinator, DriverRegistry } from '@troupe/coordinator';
import { toClientError } from '@troupe/client';
import { loadJobApi } from '@troupe/proto';
import { randomClusterName, startNatsServer } from '@troupe/testkit';
import fc from 'fast-check';
import { hostileJson, hostileYaml, mutatedDocument, nastyString, wrongValue } from '../arbitraries';
import type { FuzzTarget } from '../fuzz-target';
import { judgeError } from '../oracle';
import { repoRoot } from '../repo-root';
import { seedSpecs } from './spec-text';

/**
 * How long a call may take before it counts as unanswered: 10 s, or `TROUPE_FUZZ_CALL_DEADLINE_MS`
 * (CI's short run uses a stall bound: on a loaded shared machine a 10 s deadline is noise there,
 * while `npm run fuzz` keeps it).
 */
function callDeadlineMs(): number {
  const v = Number(process.env['TROUPE_FUZZ_CALL_DEADLINE_MS']);
  return Number.isFinite(v) && v > 0 ? v : 10_000;
}

/**
 * One gRPC call: a method and its request (an object, or raw bytes for the wire); for a
 * client-streaming method, its messages (`chunks`, objects or raw bytes).
 */
export interface GrpcCase {
  method: string;
  request: Record<string, unknown> | Uint8Array;
  chunks?: (Record<string, unknown> | Uint8Array)[];
  how: string;
}

/** A task file the seed specs of the `grpc` target name (uploaded when the target starts). */
const SEED_TASK_FILE = '{"id":"a","command":"true"}\n{"id":"b","command":["sh","-c","exit 0"]}\n';

const UNARY = [
  'SubmitJob',
  'GetJob',
  'ListJobs',
  'CancelJob',
  'DeleteJob',
  'GetResults',
  'DrainNode',
  'Rollout',
  'GetRollouts',
  'GetBudget',
];
const STREAMING = ['WatchJob', 'GetArtifact'];
const CLIENT_STREAMING = ['UploadTaskFile'];
const SERVICE_OF: Record<string, string> = { DrainNode: 'NodeService', ListNodes: 'NodeService' };

const jobId = fc.oneof(nastyString, fc.stringMatching(/^[0-9A-Za-z]{1,40}$/), fc.constant(''));

/** Fields of the requests the API defines, with hostile values. */
function requests(specs: unknown[]): fc.Arbitrary<GrpcCase> {
  const spec = fc.oneof(mutatedDocument(specs, 'spec'), hostileYaml, hostileJson);
  return fc.oneof(
    {
      arbitrary: fc
        .record({
          spec,
          format: fc.constantFrom(
            'SPEC_FORMAT_UNSPECIFIED',
            'SPEC_FORMAT_YAML',
            'SPEC_FORMAT_JSON',
          ),
          key: fc.oneof(fc.constant(''), nastyString),
          resume: fc.oneof(fc.constant(''), fc.constant(''), jobId),
        })
        .map(({ spec, format, key, resume }) => ({
          method: 'SubmitJob',
          request: {
            spec: spec.text,
            specFormat: format,
            idempotencyKey: key,
            resumeJobId: resume,
          },
          how: `SubmitJob ${spec.how}`,
        })),
      weight: 4,
    },
    {
      // RL rollouts: hostile endpoints, sampling out of range, odd suites and task ids.
      arbitrary: fc
        .record({
          endpoint: fc.oneof(
            fc.constant(null),
            fc.record({
              baseUrl: fc.oneof(
                nastyString,
                fc.constantFrom(
                  'http://127.0.0.1:1/v1',
                  'file:///etc/passwd',
                  'http://user:pw@host/v1',
                  'javascript:alert(1)',
                ),
              ),
              model: fc.oneof(nastyString, fc.constant('policy-v1')),
            }),
          ),
          suite: fc.oneof(
            nastyString,
            fc.constantFrom('benchmarks/suites/bugfix-mini', '../../etc', '/etc', ''),
          ),
          taskIds: fc.array(fc.oneof(nastyString, fc.constant('py-lru-cache')), { maxLength: 3 }),
          samplesPerTask: fc.integer({ min: -5, max: 100 }),
          sampling: fc.oneof(
            fc.constant(null),
            fc.record({
              temperature: fc.double({ noNaN: false }),
              topP: fc.double(),
              seed: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
              logprobs: fc.boolean(),
              topLogprobs: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
              maxTokens: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
            }),
          ),
          maxSteps: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
          concurrency: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
          noWait: fc.constant(true),
          labels: fc.dictionary(nastyString, nastyString, { maxKeys: 2 }),
        })
        .map((request) => ({ method: 'Rollout', request, how: 'Rollout' })),
      weight: 1,
    },
    {
      arbitrary: fc
        .record({ scope: fc.oneof(nastyString, fc.constantFrom('', 'cluster', 'job:nope')) })
        .map((request) => ({ method: 'GetBudget', request, how: 'GetBudget' })),
      weight: 1,
    },
    ...['GetJob', 'CancelJob', 'DeleteJob', 'GetResults', 'GetRollouts'].map((method) => ({
      arbitrary: fc
        .record({ jobId, reason: nastyString })
        .map((request) => ({ method, request, how: method })),
      weight: 1,
    })),
    {
      arbitrary: fc
        .record({
          states: fc.array(
            fc.constantFrom('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'),
            { maxLength: 3 },
          ),
          labelSelector: fc.dictionary(nastyString, nastyString, { maxKeys: 3 }),
          pageSize: fc.oneof(
            fc.integer({ min: -2_000, max: 2_000 }),
            fc.constantFrom(-(2 ** 31), 2 ** 31 - 1),
          ),
          pageToken: fc.oneof(fc.constant(''), nastyString, fc.base64String({ maxLength: 200 })),
        })
        .map((request) => ({ method: 'ListJobs', request, how: 'ListJobs' })),
      weight: 1,
    },
    {
      arbitrary: fc
        .record({ jobId, fromSequence: fc.oneof(fc.nat(), fc.constant(Number.MAX_SAFE_INTEGER)) })
        .map((request) => ({ method: 'WatchJob', request, how: 'WatchJob' })),
      weight: 1,
    },
    {
      arbitrary: fc
        .record({
          jobId,
          path: fc.oneof(
            nastyString,
            fc.constantFrom('../../../../etc/passwd', 'a/../../b', '/etc/passwd', 'output.log'),
          ),
        })
        .map((request) => ({ method: 'GetArtifact', request, how: 'GetArtifact' })),
      weight: 1,
    },
    {
      arbitrary: fc
        .record({ hostId: nastyString, reason: nastyString })
        .map((request) => ({ method: 'DrainNode', request, how: 'DrainNode' })),
      weight: 1,
    },
    {
      // Task file uploads: chunks with hostile text or bytes, names, and raw messages.
      arbitrary: fc
        .array(
          fc.oneof(
            fc
              .record({
                data: fc.oneof(
                  fc.uint8Array({ maxLength: 300 }),
                  nastyString.map((t) => new TextEncoder().encode(t)),
                  fc.constant(new TextEncoder().encode(SEED_TASK_FILE)),
                ),
                name: fc.oneof(fc.constant('tasks.jsonl'), fc.constant(''), nastyString),
              })
              .map((r): Record<string, unknown> => r),
            fc.uint8Array({ maxLength: 100 }),
          ),
          { maxLength: 4 },
        )
        .map((chunks) => ({
          method: 'UploadTaskFile',
          request: {},
          chunks,
          how: `UploadTaskFile ${chunks.length} chunks`,
        })),
      weight: 1,
    },
    {
      // Bytes that are no protobuf message, or one of the wrong type.
      arbitrary: fc
        .tuple(fc.constantFrom(...UNARY, ...STREAMING), fc.uint8Array({ maxLength: 300 }))
        .map(([method, request]) => ({ method, request, how: `${method} raw bytes` })),
      weight: 1,
    },
    {
      arbitrary: fc.tuple(fc.constantFrom(...UNARY), wrongValue).map(([method, v]) => ({
        method,
        request: {
          jobId: typeof v === 'string' ? v : (JSON.stringify(v) ?? ''),
          spec: JSON.stringify(v) ?? '',
        },
        how: `${method} JSON value`,
      })),
      weight: 1,
    },
  );
}

/**
 * (e) gRPC requests to a real job API server: a coordinator with every shipped driver serving
 * the API on 127.0.0.1:0 over a testkit nats-server. Every status is OK, INVALID_ARGUMENT naming
 * a request field, or NOT_FOUND for a lookup — never INTERNAL or UNKNOWN — and `GetJob` of a
 * known job still succeeds after each case.
 */
export const grpcRequestsTarget: FuzzTarget<GrpcCase> = {
  name: 'grpc',
  description: 'job API requests (typed and raw bytes) to a real coordinator over gRPC',
  async start() {
    const root = repoRoot();
    const cwd = process.cwd();
    process.chdir(root);
    const server = await startNatsServer();
    const token = 'fuzz-token-0123456789abcdef';
    const coordinator = await Coordinator.start(
      {
        cluster: randomClusterName(),
        nats: { servers: server.url },
        metrics: { port: null },
        shutdownGraceMs: 1_000,
        grpc: { host: '127.0.0.1', port: 0, token },
      },
      { drivers: registerBuiltinDrivers(new DriverRegistry()) },
    );
    const api = loadJobApi();
    const clientStreamEncoder = (method: string) => {
      const def = (
        api.JobService.service as Record<
          string,
          { requestSerialize: (m: Record<string, unknown>) => Buffer }
        >
      )[method]!;
      return (m: Record<string, unknown>) => def.requestSerialize(m);
    };
    const address = `127.0.0.1:${coordinator.grpcPort}`;
    const clients = {
      JobService: new api.JobService(address, credentials.createInsecure()),
      NodeService: new api.NodeService(address, credentials.createInsecure()),
    };
    const metadata = () => {
      const m = new Metadata();
      m.set('authorization', `Bearer ${token}`);
      return m;
    };
    const serviceOf = (method: string) =>
      clients[(SERVICE_OF[method] ?? 'JobService') as keyof typeof clients];
    const pathOf = (method: string) => `/troupe.v1.${SERVICE_OF[method] ?? 'JobService'}/${method}`;

    /** Calls `method`; resolves with the error (or undefined on success / a first stream message). */
    const call = (c: GrpcCase): Promise<ServiceError | undefined> =>
      new Promise((resolve) => {
        const client = serviceOf(c.method) as unknown as Client;
        const deadline = Date.now() + callDeadlineMs();
        const raw = c.request instanceof Uint8Array;
        const serialize = raw ? (b: Uint8Array) => Buffer.from(b) : undefined;
        if (CLIENT_STREAMING.includes(c.method)) {
          // Raw chunks go through a serializer that passes bytes and encodes objects.
          const encode = clientStreamEncoder(c.method);
          const stream = client.makeClientStreamRequest(
            pathOf(c.method),
            (m: Record<string, unknown> | Uint8Array) =>
              m instanceof Uint8Array ? Buffer.from(m) : encode(m),
            (b: Buffer) => b,
            metadata(),
            { deadline },
            (err: ServiceError | null) => resolve(err ?? undefined),
          );
          for (const chunk of c.chunks ?? []) stream.write(chunk);
          stream.end();
          return;
        }
        if (STREAMING.includes(c.method)) {
          const stream = raw
            ? client.makeServerStreamRequest(
                pathOf(c.method),
                serialize!,
                (b: Buffer) => b,
                c.request as Uint8Array,
                metadata(),
                { deadline },
              )
            : (
                client as unknown as Record<
                  string,
                  (r: unknown, m: Metadata, o: unknown) => ClientReadableStream<unknown>
                >
              )[c.method]!(c.request, metadata(), { deadline });
          let done = false;
          const finish = (err?: ServiceError) => {
            if (done) return;
            done = true;
            stream.cancel();
            resolve(err);
          };
          stream.on('data', () => finish());
          stream.on('error', (err: ServiceError) =>
            finish(err.code === status.CANCELLED ? undefined : err),
          );
          stream.on('end', () => finish());
          return;
        }
        const cb = (err: ServiceError | null) => resolve(err ?? undefined);
        if (raw) {
          client.makeUnaryRequest(
            pathOf(c.method),
            serialize!,
            (b: Buffer) => b,
            c.request as Uint8Array,
            metadata(),
            { deadline },
            cb,
          );
        } else {
          (
            client as unknown as Record<
              string,
              (r: unknown, m: Metadata, o: unknown, cb: unknown) => void
            >
          )[c.method]!(c.request, metadata(), { deadline }, cb);
        }
      });

    const created = await call({
      method: 'SubmitJob',
      request: {
        spec: JSON.stringify({ kind: 'shell-tasks', tasks: [{ id: 'a', command: 'true' }] }),
      },
      how: 'seed job',
    });
    if (created) throw created;
    // A stored task file, and a seed spec naming it, for the mutations to work on.
    const uploaded = await new Promise<string>((resolve, reject) => {
      const stream = (
        clients.JobService as unknown as {
          UploadTaskFile: (
            m: Metadata,
            cb: (e: ServiceError | null, r: { upload: string }) => void,
          ) => { write(m: unknown): void; end(): void };
        }
      ).UploadTaskFile(metadata(), (err, r) => (err ? reject(err) : resolve(r.upload)));
      stream.write({ data: Buffer.from(SEED_TASK_FILE), name: 'tasks.jsonl' });
      stream.end();
    });
    const taskFileSpec = {
      name: 'from-file',
      kind: 'shell-tasks',
      concurrency: 2,
      tasks: { file: 'tasks.jsonl', upload: uploaded },
    };
    const known = await new Promise<string>((resolve, reject) =>
      (
        clients.JobService as unknown as {
          listJobs: (
            r: unknown,
            m: Metadata,
            cb: (e: ServiceError | null, r: { jobs: { jobId: string }[] }) => void,
          ) => void;
        }
      ).listJobs({}, metadata(), (err, r) => (err ? reject(err) : resolve(r.jobs[0]!.jobId))),
    );
    return {
      arbitrary: requests([...seedSpecs(root), taskFileSpec]),
      async run(c) {
        const err = await call(c);
        if (err === undefined) return {};
        if (err.code === status.DEADLINE_EXCEEDED)
          return { wrong: `${c.how}: DEADLINE_EXCEEDED after ${callDeadlineMs() / 1000} s` };
        // Judged as the SDK reports it: a request over the server's message limit is refused by
        // grpc-js itself (RESOURCE_EXHAUSTED, no Troupe metadata), which the SDK names `request`.
        const wrong = judgeError(toClientError(err, address), {
          alsoAllowed: ['NOT_FOUND'],
          fieldPrefix: [
            'spec',
            'job_id',
            'job id',
            'host id',
            'page_size',
            'page_token',
            'path',
            'host_id',
            'idempotency_key',
            'resume_job_id',
            'request',
            'label',
            'states',
            'from_sequence',
            'reason',
            'format',
            'scope',
            'chunks',
            'name',
          ],
        });
        return wrong ? { wrong: `${c.how}: ${wrong}` } : {};
      },
      async checkValid() {
        const err = await call({ method: 'GetJob', request: { jobId: known }, how: 'valid' });
        return err ? `GetJob ${known}: ${err.message}` : undefined;
      },
      async stop() {
        clients.JobService.close();
        clients.NodeService.close();
        await coordinator.stop();
        await server.stop();
        process.chdir(cwd);
      },
    };
  },
};
