import { createModelAgentRunner, jobMcp } from '../../src/issue-resolution';

// A job spec names MCP servers for its model agents in `spec.agent.params.mcp` (the template's
// `mcp` field), checked when the job is validated.

const runner = createModelAgentRunner({ models: { has: () => true, names: () => ['m'] } });

test('spec.agent.params.mcp becomes the template’s mcp; a bad one is refused naming the field', () => {
  const mcp = { servers: [{ name: 'calc', stdio: { command: 'node', args: ['s.js'] } }] };
  expect(jobMcp({ model: 'm', params: { mcp } })).toMatchObject({
    servers: [{ name: 'calc', stdio: { command: 'node', args: ['s.js'], env: {} } }],
    callTimeoutMs: 60_000,
  });
  expect(jobMcp({ model: 'm' })).toBeUndefined();
  expect(() => runner.validate?.({ model: 'm', params: { mcp } })).not.toThrow();
  expect(() =>
    runner.validate?.({ model: 'm', params: { mcp: { servers: [{ name: 'calc' }] } } }),
  ).toThrow('spec.agent.params.mcp.servers[0].stdio: give exactly one of stdio and url');
});
