import { randomClusterName } from '@troupe/testkit';

describe('randomClusterName', () => {
  it('is t- followed by 8 lowercase hex digits', () => {
    for (let i = 0; i < 50; i += 1) {
      const name = randomClusterName();
      expect(name).toMatch(/^t-[0-9a-f]{8}$/);
      expect(name).toMatch(/^[a-z0-9-]+$/);
    }
  });

  it('differs between calls', () => {
    const names = new Set(Array.from({ length: 200 }, () => randomClusterName()));
    expect(names.size).toBe(200);
  });
});
