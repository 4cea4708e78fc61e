import v8 from 'node:v8';
import { ConfigSchema } from '@troupe/coordinator';
import { limitHeapGrowth } from '../../src/internal/heap-growth';

describe('limitHeapGrowth', () => {
  afterEach(() => jest.restoreAllMocks());

  it("sets V8's heap growing factor for the process; 0 leaves V8's own", () => {
    const set = jest.spyOn(v8, 'setFlagsFromString').mockImplementation(() => undefined);
    limitHeapGrowth(100);
    expect(set).toHaveBeenCalledWith('--heap-growing-percent=100');
    set.mockClear();
    limitHeapGrowth(0);
    expect(set).not.toHaveBeenCalled();
  });

  it('refuses a negative or fractional percent', () => {
    const set = jest.spyOn(v8, 'setFlagsFromString').mockImplementation(() => undefined);
    expect(() => limitHeapGrowth(-1)).toThrow(/integer >= 0/);
    expect(() => limitHeapGrowth(1.5)).toThrow(/integer >= 0/);
    expect(set).not.toHaveBeenCalled();
  });

  it('is 100 by default in the config, 0..300, named when refused', () => {
    expect(ConfigSchema.parse({}).heapGrowthPercent).toBe(100);
    expect(ConfigSchema.parse({ heapGrowthPercent: 0 }).heapGrowthPercent).toBe(0);
    for (const bad of [-5, 301, 2.5]) {
      const parsed = ConfigSchema.safeParse({ heapGrowthPercent: bad });
      expect(parsed.error?.issues[0]?.path).toEqual(['heapGrowthPercent']);
    }
  });
});
