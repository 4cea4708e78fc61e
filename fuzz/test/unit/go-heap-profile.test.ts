import { BLOCK_CACHE_FRAMES, inuseBytesUnder } from '../../src/soak/process-sampler';

// A nats-server heap profile (pprof debug=1 text) as the soak samples it, cut to three records.
const PROFILE = `heap profile: 17: 18081056 [3379: 201991032] @ heap/1048576
1: 4194304 [2: 8388608] @ 0x7da8b7 0x7eb6fa 0x46ce01
#\t0x7da8b6\tgithub.com/nats-io/nats-server/server.getMsgBlockBuf+0xb6\t\t\tgithub.com/nats-io/nats-server/server/filestore.go:605
#\t0x7eb6f9\tgithub.com/nats-io/nats-server/server.(*msgBlock).loadBlock+0xf9\t\tgithub.com/nats-io/nats-server/server/filestore.go:3742

2: 8388608 [15: 62914560] @ 0x7da8b7 0x7eb6fa
#\t0x7da8b6\tgithub.com/nats-io/nats-server/server.getMsgBlockBuf+0xb6\t\t\tgithub.com/nats-io/nats-server/server/filestore.go:605
#\t0x7edc2a\tgithub.com/nats-io/nats-server/server.(*fileStore).loadLast+0x48a\t\tgithub.com/nats-io/nats-server/server/filestore.go:4100

3: 1048576 [9: 3145728] @ 0x7e0001
#\t0x7e0000\tgithub.com/nats-io/nats-server/server.(*msgBlock).writeMsgRecord+0x604\tgithub.com/nats-io/nats-server/server/filestore.go:2900

# runtime.MemStats
# HeapAlloc = 18871456
`;

test('the bytes in use under a function are summed over the records whose stack has it', () => {
  expect(inuseBytesUnder(PROFILE, '/server.getMsgBlockBuf+')).toBe(4194304 + 8388608);
  expect(inuseBytesUnder(PROFILE, 'writeMsgRecord')).toBe(1048576);
  expect(inuseBytesUnder(PROFILE, 'server.(*fileStore).loadLast')).toBe(8388608);
  expect(inuseBytesUnder(PROFILE, 'nowhere')).toBe(0);
  // The header and the MemStats footer are not records.
  expect(inuseBytesUnder(PROFILE, 'heap')).toBe(0);
});

test('the block cache is the blocks loaded and the newest block written, each record once', () => {
  expect(inuseBytesUnder(PROFILE, BLOCK_CACHE_FRAMES)).toBe(4194304 + 8388608 + 1048576);
  // A record whose stack has two of the frames counts once.
  expect(inuseBytesUnder(PROFILE, ['getMsgBlockBuf', 'loadLast'])).toBe(4194304 + 8388608);
});
