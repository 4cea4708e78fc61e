import { errorCode } from '@troupe/proto';
import { holdsTool, parseAgentTemplate } from '../../src/agent/agent-template';
import { isEffectFree } from '../../src/agent/tools/agent-tools';
import { mcpArgumentsProblem } from '../../src/mcp/mcp-args';
import { mcpServerOf, mcpToolName } from '../../src/mcp/mcp-config';

const base = { name: 'calc-user', instruction: 'x', model: 'fake' };

function problem(mcp: unknown): string {
  try {
    parseAgentTemplate({ ...base, mcp });
  } catch (err) {
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    return (err as Error).message;
  }
  throw new Error('accepted');
}

test('the mcp field: servers validated, errors name the field and the rule', () => {
  const t = parseAgentTemplate({
    ...base,
    mcp: {
      servers: [
        { name: 'calc', stdio: { command: 'node', args: ['s.js'] } },
        { name: 'notes', url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'x' } },
      ],
    },
  });
  expect(t.mcp).toMatchObject({ callTimeoutMs: 60_000, connectTimeoutMs: 30_000 });
  expect(t.mcp?.servers[0]).toMatchObject({ stdio: { command: 'node', args: ['s.js'], env: {} } });
  const calc = { name: 'calc', stdio: { command: 'node' } };
  expect(problem({ servers: [{ ...calc, url: 'http://h/mcp' }] })).toContain(
    'template.mcp.servers[0].stdio: give exactly one of stdio and url',
  );
  expect(problem({ servers: [{ name: 'calc' }] })).toContain(
    'template.mcp.servers[0].stdio: give exactly one of stdio and url',
  );
  expect(problem({ servers: [{ ...calc, name: 'my_calc' }] })).toContain(
    'template.mcp.servers[0].name: must match [a-z][a-z0-9-]{0,23}',
  );
  expect(problem({ servers: [calc, calc] })).toContain(
    'template.mcp.servers: must not repeat a name',
  );
  expect(problem({ servers: [{ ...calc, headers: { a: 'b' } }] })).toContain(
    'template.mcp.servers[0].headers: only with url',
  );
  expect(problem({ servers: [{ name: 'w', url: 'file:///etc/passwd' }] })).toContain(
    'template.mcp.servers[0].url: must be an http(s) URL',
  );
  expect(problem({ servers: [] })).toContain('template.mcp.servers: must name at least one server');
});

test('MCP tool names: namespaced by server, safe for the model API, parsed back', () => {
  expect(mcpToolName('calc', 'add')).toBe('mcp__calc__add');
  expect(mcpToolName('calc', 'files/read.v2')).toBe('mcp__calc__files_read_v2');
  expect(mcpToolName('calc', 'x'.repeat(100))).toHaveLength(64);
  expect(mcpServerOf('mcp__calc__add')).toBe('calc');
  expect(mcpServerOf('mcp__calc')).toBeUndefined();
  expect(mcpServerOf('run_terminal_command')).toBeUndefined();
});

test('an agent holds the MCP tools of its own servers only; they count as effects', () => {
  const t = parseAgentTemplate({
    ...base,
    mcp: { servers: [{ name: 'calc', stdio: { command: 'node' } }] },
  });
  expect(holdsTool(t, 'mcp__calc__add')).toBe(true);
  expect(holdsTool(t, 'mcp__other__add')).toBe(false);
  expect(holdsTool(parseAgentTemplate(base), 'mcp__calc__add')).toBe(false);
  // An MCP call is committed before it runs (like run_terminal_command), not replayed blindly.
  expect(isEffectFree(t, 'mcp__calc__add')).toBe(false);
  expect(isEffectFree(t, 'mcp__other__add')).toBe(true);
});

test('arguments are checked against the tool’s JSON schema, naming every field', () => {
  const schema = {
    type: 'object',
    properties: {
      a: { type: 'number' },
      opts: { type: 'object', properties: { mode: { enum: ['x', 'y'] } } },
    },
    required: ['a', 'b'],
    additionalProperties: false,
  };
  expect(mcpArgumentsProblem(schema, { a: 1, b: 2 })).toBe(
    '`arguments.b`: not an argument of this tool',
  );
  expect(mcpArgumentsProblem({ ...schema, additionalProperties: true }, { a: 1, b: 2 })).toBe(
    undefined,
  );
  const p = mcpArgumentsProblem(schema, { a: 'one', opts: { mode: 'z' }, extra: true });
  expect(p).toContain('`arguments.a`: must be number');
  expect(p).toContain('`arguments.b`: required');
  expect(p).toContain('`arguments.extra`: not an argument of this tool');
  expect(p).toContain('`arguments.opts.mode`: must be equal to one of the allowed values');
});
