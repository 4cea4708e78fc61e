import { parseAgentTemplate } from '../../src/agent/agent-template';
import type { TrajectoryEvent } from '../../src/agent/trajectory-event';
import { trajectoryToRecord } from '../../src/agent/trajectory-jsonl';

const base = { name: 'solver', instruction: 'Fix it.', model: 'policy-v1' };

describe('template endpoint and sampling (RL rollouts)', () => {
  it('accepts an http(s) endpoint and sampling within range, logprobs off by default', () => {
    const t = parseAgentTemplate({
      ...base,
      endpoint: { baseURL: 'https://policy.example/v1', model: 'org/policy-v1' },
      sampling: { temperature: 1.2, topP: 0.9, seed: 3 },
    });
    expect(t.endpoint).toEqual({ baseURL: 'https://policy.example/v1', model: 'org/policy-v1' });
    expect(t.sampling).toEqual({ temperature: 1.2, topP: 0.9, seed: 3, logprobs: false });
  });

  it.each([
    [{ endpoint: { baseURL: 'file:///etc/passwd', model: 'm' } }, 'template.endpoint.baseURL'],
    [{ endpoint: { baseURL: 'http://u:p@policy/v1', model: 'm' } }, 'template.endpoint.baseURL'],
    [{ endpoint: { baseURL: 'http://policy/v1', model: 'has space' } }, 'template.endpoint.model'],
    [{ endpoint: { baseURL: 'http://p/v1', model: 'm', apiKeyEnv: 'K' } }, 'apiKeyEnv'],
    [{ sampling: { temperature: 2.1 } }, 'template.sampling.temperature'],
    [{ sampling: { topP: 0 } }, 'template.sampling.topP'],
    [{ sampling: { topLogprobs: 21 } }, 'template.sampling.topLogprobs'],
  ])('refuses %j naming the field', (over, field) => {
    expect(() => parseAgentTemplate({ ...base, ...over })).toThrow(field);
  });
});

describe('trajectoryToRecord with logprobs', () => {
  it('lists the logprobs of each model call against its assistant message', () => {
    const ev = (seq: number, e: Partial<TrajectoryEvent>): TrajectoryEvent => ({
      sessionId: 's',
      seq,
      epoch: 1,
      runId: 'r',
      atMs: seq,
      type: 'message',
      data: {},
      ...e,
    });
    const tokens = [{ token: 'ok', logprob: -0.1 }];
    const record = trajectoryToRecord('s', [
      ev(1, {
        type: 'run_start',
        messages: [
          { role: 'system', content: 'sys' },
          { role: 'user', content: 'task' },
        ],
      }),
      ev(2, {
        type: 'model_call',
        messages: [{ role: 'assistant', content: 'ok' }],
        data: { logprobs: tokens },
      }),
      ev(3, { type: 'model_call', messages: [{ role: 'assistant', content: 'no logprobs' }] }),
    ]);
    expect(record.messages).toHaveLength(4);
    expect(record.logprobs).toEqual([{ messageIndex: 2, tokens }]);
    expect(trajectoryToRecord('s', [ev(1, { type: 'run_start' })]).logprobs).toBeUndefined();
  });
});
