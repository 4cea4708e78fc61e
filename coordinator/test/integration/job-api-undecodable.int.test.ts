import { type Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { fromGrpcError, loadJobApi } from '@troupe/proto';
import { TestCluster } from '@troupe/test-cluster';

let cluster: TestCluster;
let client: Client;

beforeAll(async () => {
  cluster = await TestCluster.start({ jobApi: true });
  client = new (loadJobApi().JobService)(cluster.address, credentials.createInsecure());
});
afterAll(async () => {
  client.close();
  await cluster.stop();
});

/** Sends `bytes` as the request of `method`; resolves with the call's error (null: success). */
function rawCall(method: string, bytes: Uint8Array): Promise<ServiceError | null> {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${cluster.token}`);
  return new Promise((resolve) =>
    client.makeUnaryRequest(
      `/troupe.v1.JobService/${method}`,
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from(bytes),
      metadata,
      { deadline: Date.now() + 10_000 },
      (err) => resolve(err),
    ),
  );
}

test('request bytes that are not the method’s message are INVALID_ARGUMENT on `request`', async () => {
  // Field 12 with wire type 4 (an end-group without its start; found by the fuzzer): protobufjs
  // refuses to decode it. grpc-js answered
  // such bytes INTERNAL ("Error deserializing request").
  const err = await rawCall('GetJob', Uint8Array.from([0x64, 0x55, 0xa0]));
  expect(err?.code).toBe(status.INVALID_ARGUMENT);
  const e = fromGrpcError(err);
  expect(e.code).toBe('INVALID_ARGUMENT');
  expect(e.message).toMatch(/^`request`: is not a valid GetJob request message \(protobuf: /);
  // The server keeps serving: a well-formed GetJob of an unknown job is NOT_FOUND.
  const ok = await rawCall('GetJob', Uint8Array.from([0x0a, 0x02, 0x6a, 0x31]));
  expect(ok?.code).toBe(status.NOT_FOUND);
});
