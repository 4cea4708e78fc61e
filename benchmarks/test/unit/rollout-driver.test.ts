import * as path from 'node:path';
import { parseJobSpec } from '@troupe/coordinator';
import { createRolloutDriver, ROLLOUT_UNAVAILABLE } from '@troupe/benchmarks';
import { type TroupeError } from '@troupe/proto';

const SUITE = path.resolve(__dirname, '../../suites/bugfix-mini');

function spec(over: Record<string, unknown> = {}) {
  return parseJobSpec({
    kind: 'rollout',
    tasks: { suite: SUITE, include: ['py-lru-cache'] },
    config: { endpoint: { baseURL: 'http://policy:8000/v1', model: 'policy-v1' } },
    ...over,
  });
}

async function refusal(p: Promise<unknown> | void): Promise<TroupeError> {
  try {
    await p;
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a refusal');
}

describe('the rollout driver', () => {
  const driver = createRolloutDriver({ agentHosts: true });

  test('accepts a rollout spec over an issue-resolution suite', async () => {
    await expect(driver.validate(spec())).resolves.toBeUndefined();
  });

  test('is refused without an agent host, saying how to get one', async () => {
    const err = await refusal(createRolloutDriver().validate(spec()));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toContain(ROLLOUT_UNAVAILABLE);
  });

  test.each([
    [{ agent: { model: 'x' } }, 'spec.agent'],
    [
      {
        config: {
          endpoint: { baseURL: 'http://policy/v1', model: 'm' },
          sampling: { temperature: 9 },
        },
      },
      'spec.config.sampling.temperature',
    ],
    [
      { config: { endpoint: { baseURL: 'gopher://policy', model: 'm' } } },
      'spec.config.endpoint.baseURL',
    ],
    [{ config: {} }, 'spec.config.endpoint'],
    [{ tasks: { suite: SUITE, include: ['no-such-task'] } }, 'no-such-task'],
  ])('refuses %j naming %s', async (over, field) => {
    const err = await refusal(driver.validate(spec(over)));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message.replace(/`/g, '')).toContain(field);
  });
});
