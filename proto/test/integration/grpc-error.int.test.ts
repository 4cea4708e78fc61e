// A real grpc-js server and client on loopback: every error code thrown by a handler reaches the
// client as the same code, retryable flag, details and message, and nothing else leaks.
import {
  credentials,
  type Metadata,
  Server,
  ServerCredentials,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import {
  ErrorCode,
  fromGrpcError,
  type JobEvent__Output,
  type JobServiceClient,
  type JobServiceHandlers,
  loadJobApi,
  toGrpcServiceError,
  TroupeError,
} from '@troupe/proto';

const ALL_CODES = Object.values(ErrorCode);
const MESSAGE_TAIL = '\nsecond line: ünïcødé 日本語 🎭 "quotes" 100%';

/** What the handler throws for a request `jobId` of the form `<what>[:flip]`. */
function errorFor(jobId: string): unknown {
  const [what = '', flag] = jobId.split(':');
  switch (what) {
    case 'plain':
      return new Error('plain failure');
    case 'string':
      return 'thrown string';
    case 'null':
      return null;
    case 'huge':
      return new TroupeError('INVALID_ARGUMENT', `${'日'.repeat(20_000)}`, {
        details: {
          issues: Array.from({ length: 2_000 }, (_, i) => ({ field: `f${i}`, rule: 'r' })),
        },
      });
    default: {
      const code = what as ErrorCode;
      const defaultRetryable = new TroupeError(code, 'x').retryable;
      return new TroupeError(code, `${code} happened${MESSAGE_TAIL}`, {
        retryable: flag === 'flip' ? !defaultRetryable : defaultRetryable,
        details: { code, attempt: 2, nested: { ok: true } },
        cause: new Error('db password=hunter2'),
      });
    }
  }
}

describe('gRPC errors over a real connection', () => {
  const api = loadJobApi();
  let server: Server;
  let client: JobServiceClient;
  let port: number;

  beforeAll(async () => {
    server = new Server();
    const handlers: Partial<JobServiceHandlers> = {
      GetJob: (call, callback) => {
        if (call.request.jobId === 'hang') return; // never answers: the client deadline fires
        callback(toGrpcServiceError(errorFor(call.request.jobId)));
      },
      WatchJob: (call) => {
        call.write({ sequence: 1, jobId: call.request.jobId, type: 'JOB_QUEUED' });
        call.emit('error', toGrpcServiceError(errorFor(call.request.jobId)));
      },
    };
    // Methods left out answer UNIMPLEMENTED.
    server.addService(api.JobService.service, handlers as JobServiceHandlers);
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    client = new api.JobService(`127.0.0.1:${port}`, credentials.createInsecure());
  });

  afterAll(() => {
    client?.close();
    server?.forceShutdown();
  });

  /** Calls GetJob and returns the ServiceError it fails with. */
  function getJobError(jobId: string, deadlineMs = 5_000): Promise<ServiceError> {
    return new Promise((resolve, reject) => {
      client.getJob({ jobId }, { deadline: Date.now() + deadlineMs }, (err) =>
        err ? resolve(err) : reject(new Error('the call succeeded')),
      );
    });
  }

  it.each(ALL_CODES)(
    '%s arrives with the same code, retryable flag, details and message',
    async (code) => {
      for (const flip of [false, true]) {
        const sent = errorFor(flip ? `${code}:flip` : code) as TroupeError;
        const err = await getJobError(flip ? `${code}:flip` : code);
        expect(err.code).toBe(toGrpcServiceError(sent).code);
        const got = fromGrpcError(err);
        expect(got).toBeInstanceOf(TroupeError);
        expect(got.code).toBe(code);
        expect(got.retryable).toBe(sent.retryable);
        expect(got.details).toEqual({ code, attempt: 2, nested: { ok: true } });
        expect(got.message).toBe(`${code} happened${MESSAGE_TAIL}`);
      }
    },
  );

  it('does not send the cause or the stack', async () => {
    const err = await getJobError('INTERNAL');
    const trailers: Metadata = err.metadata;
    const everything = JSON.stringify({ details: err.details, md: trailers.getMap() });
    expect(everything).not.toContain('hunter2');
    expect(everything).not.toContain('.ts:');
    expect(fromGrpcError(err).cause).toBe(err);
  });

  it.each([
    ['plain', 'plain failure'],
    ['string', 'thrown string'],
    ['null', 'unknown error (null)'],
  ])('an unknown error (%s) arrives as INTERNAL, not retryable', async (what, message) => {
    const err = await getJobError(what);
    expect(err.code).toBe(status.INTERNAL);
    const got = fromGrpcError(err);
    expect(got.code).toBe('INTERNAL');
    expect(got.retryable).toBe(false);
    expect(got.message).toBe(message);
  });

  it('a huge error is capped, not turned into a transport failure', async () => {
    const got = fromGrpcError(await getJobError('huge'));
    expect(got.code).toBe('INVALID_ARGUMENT');
    expect(got.message.startsWith('日日日')).toBe(true);
    expect(got.message.endsWith('…')).toBe(true);
    expect(got.details).toMatchObject({ truncated: true });
  });

  it('a streaming handler fails the stream with the same error', async () => {
    const stream = client.watchJob({ jobId: 'BUSY:flip' }, { deadline: Date.now() + 5_000 });
    const events: JobEvent__Output[] = [];
    stream.on('data', (e: JobEvent__Output) => events.push(e));
    const err = await new Promise<ServiceError>((resolve) => stream.on('error', resolve));
    expect(events.map((e) => e.type)).toEqual(['JOB_QUEUED']);
    const got = fromGrpcError(err);
    expect(got.code).toBe('BUSY');
    expect(got.retryable).toBe(false);
    expect(got.details).toEqual({ code: 'BUSY', attempt: 2, nested: { ok: true } });
  });

  it("grpc-js' own deadline error becomes a retryable TIMEOUT", async () => {
    const got = fromGrpcError(await getJobError('hang', 50));
    expect(got.code).toBe('TIMEOUT');
    expect(got.retryable).toBe(true);
  });

  it('an unreachable server becomes a retryable UNAVAILABLE', async () => {
    const probe = new Server();
    const freePort = await new Promise<number>((resolve, reject) =>
      probe.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    await new Promise<void>((resolve) => probe.tryShutdown(() => resolve()));
    const dead = new api.JobService(`127.0.0.1:${freePort}`, credentials.createInsecure());
    try {
      const err = await new Promise<ServiceError>((resolve, reject) =>
        dead.getJob({ jobId: 'x' }, { deadline: Date.now() + 5_000 }, (e) =>
          e ? resolve(e) : reject(new Error('the call succeeded')),
        ),
      );
      const got = fromGrpcError(err);
      expect(got.code).toBe('UNAVAILABLE');
      expect(got.retryable).toBe(true);
    } finally {
      dead.close();
    }
  });
});
