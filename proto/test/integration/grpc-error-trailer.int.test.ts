// A client with the 8 KiB metadata limit of C-core gRPC clients (Python, Go, C++) still reads the
// real error when the server's error echoes a very long offending value: the trailer the server
// sends stays under the limit. The client is a plain HTTP/2 client that advertises
// SETTINGS_MAX_HEADER_LIST_SIZE = 8192, as C-core does by default, so it refuses a larger trailer
// the way those clients do (grpc-js itself sets no limit).
import http2 from 'node:http2';
import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import {
  GrpcErrorMetadataKey,
  type JobServiceHandlers,
  loadJobApi,
  toGrpcServiceError,
  TroupeError,
} from '@troupe/proto';

const C_CORE_DEFAULT_MAX_METADATA_BYTES = 8192;

interface RawReply {
  /** Response headers and trailers merged (a trailers-only reply has no separate trailers). */
  meta: Record<string, string>;
  /** Set when the stream failed instead of ending with a status. */
  streamError?: string;
}

describe('gRPC error trailers under an 8 KiB metadata limit', () => {
  const api = loadJobApi();
  let server: Server;
  let port: number;

  beforeAll(async () => {
    server = new Server();
    const handlers: Partial<JobServiceHandlers> = {
      GetJob: (call, callback) => {
        const value = call.request.jobId;
        // As a spec validator does: the message and every issue's rule echo the offending value.
        callback(
          toGrpcServiceError(
            new TroupeError(
              'INVALID_ARGUMENT',
              `\`spec.kind\`: unknown job kind (got "${value}")`,
              {
                details: {
                  issues: [
                    { field: 'spec.kind', rule: `unknown job kind (got "${value}")` },
                    { field: 'spec.name', rule: `must match [a-z0-9._-] (got "${value}")` },
                  ],
                  knownKinds: ['evolve', 'issue-resolution', 'shell-tasks'],
                },
              },
            ),
          ),
        );
      },
    };
    server.addService(api.JobService.service, handlers as JobServiceHandlers);
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
  });

  afterAll(() => {
    server?.forceShutdown();
  });

  /** Calls GetJob over HTTP/2 with the C-core metadata limit and collects the reply metadata. */
  function rawGetJob(jobId: string): Promise<RawReply> {
    const message = api.JobService.service.GetJob.requestSerialize({ jobId });
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    message.copy(frame, 5);
    return new Promise((resolve, reject) => {
      const session = http2.connect(`http://127.0.0.1:${port}`, {
        settings: { maxHeaderListSize: C_CORE_DEFAULT_MAX_METADATA_BYTES },
      });
      const meta: Record<string, string> = {};
      const collect = (headers: http2.IncomingHttpHeaders) => {
        for (const [k, v] of Object.entries(headers)) if (typeof v === 'string') meta[k] = v;
      };
      const done = (reply: RawReply) => {
        session.close();
        resolve(reply);
      };
      session.on('error', (err) => done({ meta, streamError: err.message }));
      const req = session.request({
        ':method': 'POST',
        ':path': '/troupe.v1.JobService/GetJob',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      req.on('response', collect);
      req.on('trailers', collect);
      req.on('data', () => undefined);
      req.on('end', () => done({ meta }));
      req.on('error', (err) => done({ meta, streamError: err.message }));
      req.setTimeout(10_000, () => reject(new Error('no reply within 10 s')));
      req.end(frame);
    });
  }

  it('a short value arrives as usual (control)', async () => {
    const reply = await rawGetJob('nope');
    expect(reply.streamError).toBeUndefined();
    expect(reply.meta['grpc-status']).toBe(String(status.INVALID_ARGUMENT));
    expect(reply.meta[GrpcErrorMetadataKey.CODE]).toBe('INVALID_ARGUMENT');
  });

  it.each([
    ['ASCII', 'x'.repeat(30_000)],
    ['non-ASCII', '日'.repeat(30_000)],
  ])('a %s value of 30,000 characters still yields the real error', async (_what, value) => {
    const reply = await rawGetJob(value);
    expect(reply.streamError).toBeUndefined();
    expect(reply.meta['grpc-status']).toBe(String(status.INVALID_ARGUMENT));
    expect(reply.meta[GrpcErrorMetadataKey.CODE]).toBe('INVALID_ARGUMENT');
    expect(decodeURIComponent(reply.meta['grpc-message'] ?? '')).toMatch(
      /^`spec\.kind`: unknown job kind \(got "(x|日)+…$/,
    );
    const details = JSON.parse(reply.meta[GrpcErrorMetadataKey.DETAILS] ?? '{}') as {
      issues?: { field: string }[];
      knownKinds?: string[];
      truncated?: boolean;
    };
    // The long strings are cut, the structure a client acts on survives.
    expect(details.truncated).toBe(true);
    expect(details.issues?.map((i) => i.field)).toEqual(['spec.kind', 'spec.name']);
    expect(details.knownKinds).toEqual(['evolve', 'issue-resolution', 'shell-tasks']);
  });
});
