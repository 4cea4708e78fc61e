import { dockerFixture, leftovers, removeLeftovers, type DockerFixture } from './helpers';

// The root config's project-level testTimeout is not applied by jest: set it here.
jest.setTimeout(120_000);

describe('many sandboxes at once (Docker)', () => {
  let fx: DockerFixture;

  beforeAll(async () => {
    fx = await dockerFixture();
  });

  afterAll(async () => {
    await fx.backend.close();
    await removeLeftovers(fx.docker, fx.cluster);
  });

  test('20 sandboxes are created, used and destroyed concurrently', async () => {
    const n = 20;
    const outputs = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const sb = await fx.backend.create(fx.spec({}, `sandbox/c${i}`));
        try {
          await sb.putFiles('/workspace', { 'id.txt': `box-${i}` });
          const r = await sb.exec(['sh', '-c', 'cat id.txt; echo " $(hostname)"']);
          expect(r.exitCode).toBe(0);
          return { id: sb.id, out: r.stdout };
        } finally {
          await sb.destroy();
        }
      }),
    );
    expect(outputs.map((o) => o.out)).toEqual(
      Array.from({ length: n }, (_, i) => `box-${i} sandbox\n`),
    );
    expect(new Set(outputs.map((o) => o.id)).size).toBe(n);
    expect(fx.backend.size).toBe(0);
    expect(await leftovers(fx.docker, fx.cluster)).toEqual({ containers: [], volumes: [] });
  });
});
