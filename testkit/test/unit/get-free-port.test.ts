import net from 'node:net';
import { getFreePort } from '@troupe/testkit';

describe('getFreePort', () => {
  it('returns a port that can be bound on 127.0.0.1', async () => {
    const port = await getFreePort();
    expect(port).toBeGreaterThan(0);
    expect(port).toBeLessThan(65536);
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port }, resolve);
    });
    expect((server.address() as net.AddressInfo).port).toBe(port);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
