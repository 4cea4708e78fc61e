import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { type FakeCompletion, waitFor } from '@troupe/testkit';
import { z } from 'zod';
import { runAgentSession } from '../../src/agent/agent-session';
import { type AgentCluster, startAgentCluster, toolResults } from './agent-cluster';

// MCP tool servers end to end (issue 21): a stdio server run INSIDE the agent's Docker sandbox
// (troupe-node image, no network) and a streamable-HTTP server in this process, used by an agent
// host process through the real MCP SDK client. Only the model is fake.

const SERVER_JS = readFileSync(
  path.join(__dirname, 'agent-fixtures', 'mcp-stdio-server.js'),
  'utf8',
);

let c: AgentCluster;
let http: Server;
let httpUrl: string;
let httpCalls = 0;

/** A stateless streamable-HTTP MCP server with one tool, `shout`. */
function startHttpMcp(): Promise<void> {
  http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (b: Buffer) => chunks.push(b));
    req.on('end', () => {
      const body =
        chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const server = new McpServer({ name: 'notes', version: '1.0.0' });
      server.registerTool(
        'shout',
        { description: 'Upper-case a text.', inputSchema: { text: z.string() } },
        ({ text }) => {
          httpCalls++;
          return { content: [{ type: 'text', text: text.toUpperCase() }] };
        },
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      void server
        .connect(transport)
        .then(() => transport.handleRequest(req, res, body))
        .catch(() => res.destroy());
    });
  });
  return new Promise((resolve) =>
    http.listen(0, '127.0.0.1', () => {
      httpUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
      resolve();
    }),
  );
}

beforeAll(async () => {
  c = await startAgentCluster({ docker: true });
  await c.startHost('h1');
  await startHttpMcp();
}, 300_000);
afterAll(async () => {
  await c?.stop();
  await new Promise((resolve) => http?.close(resolve));
}, 60_000);
afterEach(() => c.fake.reset());

const call = (id: string, name: string, args: Record<string, unknown>): FakeCompletion => ({
  toolCalls: [{ id, name, arguments: args }],
});

async function nodeSandbox(id: string): Promise<void> {
  await c.client
    .refOf({ kind: 'sandbox', id })
    .ask(
      'create',
      { spec: { image: 'troupe-node', files: { 'mcp-server.js': SERVER_JS } } },
      { timeoutMs: 180_000 },
    );
}

const calc = { name: 'calc', stdio: { command: 'node', args: ['mcp-server.js'] } };

/** Pids of the test server's processes alive in the sandbox (by their command line). */
async function serverPids(sandboxId: string): Promise<string[]> {
  const r = await c.sh(sandboxId, 'grep -l "mcp-serve[r].js" /proc/[0-9]*/cmdline || true');
  return r.stdout.split('\n').filter((l) => l.startsWith('/proc/'));
}

test('a stdio MCP server in the sandbox: schemas, validation, a crash mid-call, a hang', async () => {
  const sandboxId = `mcp-sb-${randomUUID().slice(0, 8)}`;
  await nodeSandbox(sandboxId);
  c.fake.enqueue(
    {
      toolCalls: [
        { id: 'a1', name: 'mcp__calc__add', arguments: { a: 2, b: 3 } },
        { id: 'a2', name: 'mcp__calc__add', arguments: { a: 'two', c: 1 } },
      ],
    },
    call('a3', 'mcp__calc__crash', {}),
    call('a4', 'mcp__calc__add', { a: 40, b: 2 }),
    call('a5', 'mcp__calc__hang', {}),
    call('a6', 'mcp__calc__add', { a: 1, b: 1 }),
    call('a7', 'finish_task', { summary: 'done' }),
  );
  const sessionId = `mcp-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    sandboxId,
    template: {
      name: 'calc-user',
      instruction: 'You compute.',
      model: 'fake',
      mcp: { servers: [calc], callTimeoutMs: 2_000 },
    },
    task: 'Add things.',
    signal: AbortSignal.timeout(120_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'done', steps: 6 });
  const requests = c.fake.chatRequests;
  const tools = (requests[0]?.body.tools ?? []).flatMap((t) =>
    t.type === 'function' ? [t.function] : [],
  );
  expect(tools.map((t) => t.name).sort()).toEqual([
    'finish_task',
    'mcp__calc__add',
    'mcp__calc__crash',
    'mcp__calc__hang',
  ]);
  // The server's own JSON schema reaches the model.
  expect(tools.find((t) => t.name === 'mcp__calc__add')?.parameters).toMatchObject({
    properties: { a: { type: 'number' }, b: { type: 'number' } },
    required: ['a', 'b'],
  });
  const results = Object.assign({}, ...requests.map((r) => toolResults(r.body))) as Record<
    string,
    string
  >;
  expect(results['a1']).toBe('5');
  // Validated before the call, naming each field.
  expect(results['a2']).toContain('error: INVALID_ARGUMENT:');
  expect(results['a2']).toContain('`arguments.a`: must be number');
  expect(results['a2']).toContain('`arguments.b`: required');
  expect(results['a2']).toContain('`arguments.c`: not an argument of this tool');
  // The crash is a tool error with the server's exit, not a dead run.
  expect(results['a3']).toMatch(
    /^error: UNAVAILABLE: MCP server calc exited with exit code 3: calc: crashing on purpose during crash/,
  );
  // The next call reconnects once.
  expect(results['a4']).toBe('42');
  expect(results['a5']).toMatch(
    /^error: TIMEOUT: MCP server calc: hang did not answer within 2000 ms/,
  );
  // Down twice: not restarted again in this session.
  expect(results['a6']).toMatch(
    /^error: UNAVAILABLE: MCP server calc is down .*reconnected once already/,
  );
  // It ran inside the sandbox's workspace: two starts recorded there.
  const starts = await c.sh(sandboxId, 'cat mcp-starts.log');
  expect(starts.stdout.trim().split('\n')).toHaveLength(2);
  // The hung server was killed when its call timed out: no server process is left.
  expect(await serverPids(sandboxId)).toEqual([]);
  // The trajectory records the calls and the server's state changes.
  const events = await c.trajectories.read(sessionId);
  const toolCalls = events.filter((e) => e.type === 'tool_call').map((e) => e.data?.['name']);
  expect(toolCalls).toEqual([
    'mcp__calc__add',
    'mcp__calc__add',
    'mcp__calc__crash',
    'mcp__calc__add',
    'mcp__calc__hang',
    'mcp__calc__add',
    'finish_task',
  ]);
  const states = events
    .filter((e) => e.type === 'mcp_server')
    .map((e) => `${String(e.data?.['server'])}:${String(e.data?.['state'])}`);
  expect(states).toEqual(['calc:connected', 'calc:down', 'calc:connected', 'calc:down']);
  c.fake.assertScriptConsumed();
}, 180_000);

test('a subagent gets only the MCP servers its parent grants; HTTP servers work too', async () => {
  const sandboxId = `mcp-sb-${randomUUID().slice(0, 8)}`;
  await nodeSandbox(sandboxId);
  httpCalls = 0;
  c.fake.setHandler((req) => {
    const system = JSON.stringify(req.body.messages[0]);
    const results = req.body.messages.filter((m) => m.role === 'tool').length;
    if (system.includes('You are the helper')) {
      const script: FakeCompletion[] = [
        call('h1', 'mcp__calc__add', { a: 1, b: 2 }),
        call('h2', 'mcp__notes__shout', { text: 'hi' }),
        call('h3', 'finish_task', { summary: 'helper done' }),
      ];
      return script[results];
    }
    const script: FakeCompletion[] = [
      call('p1', 'create_subagent', { name: 'greedy', instruction: 'x', mcp: ['files'] }),
      call('p2', 'create_subagent', {
        name: 'helper',
        instruction: 'You are the helper.',
        mcp: ['notes'],
      }),
      call('p3', 'call_subagent', { target: 'helper', request: 'shout hi' }),
      call('p4', 'mcp__calc__add', { a: 20, b: 22 }),
      call('p5', 'finish_task', { summary: 'parent done' }),
    ];
    return script[results];
  });
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: `mcpp-${randomUUID().slice(0, 8)}`,
    sandboxId,
    template: {
      name: 'lead',
      instruction: 'You lead.',
      model: 'fake',
      tools: ['create_subagent', 'call_subagent'],
      mcp: { servers: [calc, { name: 'notes', url: httpUrl }] },
    },
    task: 'Delegate.',
    signal: AbortSignal.timeout(120_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'parent done' });
  const requests = c.fake.chatRequests;
  const isHelper = (r: (typeof requests)[number]) =>
    JSON.stringify(r.body.messages[0]).includes('You are the helper');
  const parent = Object.assign(
    {},
    ...requests.filter((r) => !isHelper(r)).map((r) => toolResults(r.body)),
  ) as Record<string, string>;
  expect(parent['p1']).toBe(
    'error: PERMISSION_DENIED: `arguments.mcp`: a subagent may only get MCP servers you hold; you lack files',
  );
  expect(parent['p2']).toContain('mcp [notes]');
  expect(parent['p3']).toContain('helper done');
  expect(parent['p4']).toBe('42');
  const helper = requests.filter(isHelper);
  const offered = (helper[0]?.body.tools ?? []).map((t) =>
    t.type === 'function' ? t.function.name : '',
  );
  expect(offered.sort()).toEqual(['finish_task', 'mcp__notes__shout']);
  const helperResults = Object.assign({}, ...helper.map((r) => toolResults(r.body))) as Record<
    string,
    string
  >;
  // The server it was not granted is refused, not reached.
  expect(helperResults['h1']).toMatch(/^error: unknown tool 'mcp__calc__add'/);
  expect(helperResults['h2']).toBe('HI');
  expect(httpCalls).toBe(1);
  // The parent's stdio server lives with its session: killed when the session is passivated
  // (the test host passivates after 5 s idle).
  expect(await serverPids(sandboxId)).toHaveLength(1);
  await waitFor(async () => (await serverPids(sandboxId)).length === 0, {
    timeoutMs: 60_000,
    message: 'the stdio MCP server is killed when its session is passivated',
  });
}, 180_000);

test('a stdio server in a declared main sandbox: each run starts it in its own sandbox', async () => {
  const jobId = `job-${randomUUID().slice(0, 8)}`;
  const sessionId = `mcpd-${randomUUID().slice(0, 8)}`;
  const template = {
    name: 'declared',
    instruction: 'You compute.',
    model: 'fake',
    // `main` is the agent's own (created on first use, destroyed at the run end): the server
    // comes from the template itself, as `node -e`, since a declared sandbox has no files.
    sandboxes: { main: { image: 'troupe-node' } },
    mcp: { servers: [{ name: 'calc', stdio: { command: 'node', args: ['-e', SERVER_JS] } }] },
  };
  const runs: Record<string, string>[] = [];
  for (const [i, [a, b]] of [
    [2, 3],
    [40, 2],
  ].entries()) {
    c.fake.reset();
    c.fake.enqueue(
      call(`r${i}a`, 'mcp__calc__add', { a, b }),
      call(`r${i}f`, 'finish_task', { summary: `run ${i} done` }),
    );
    const result = await runAgentSession({
      system: c.client,
      trajectories: c.trajectories,
      sessionId,
      jobId,
      template,
      task: `Add ${a} and ${b}.`,
      signal: AbortSignal.timeout(120_000),
    });
    expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: `run ${i} done` });
    runs.push(
      Object.assign({}, ...c.fake.chatRequests.map((r) => toolResults(r.body))) as Record<
        string,
        string
      >,
    );
    // The run's own sandbox (and the server in it) is gone when the run has ended.
    expect(await c.containers([`troupe.job=${jobId}`])).toEqual([]);
  }
  // The second run reached a server in its new sandbox, not the destroyed one's dead connection.
  expect([runs[0]?.['r0a'], runs[1]?.['r1a']]).toEqual(['5', '42']);
  const connects = (await c.trajectories.read(sessionId)).filter(
    (e) => e.type === 'mcp_server' && e.data?.['state'] === 'connected',
  );
  expect(connects).toHaveLength(2);
}, 240_000);
