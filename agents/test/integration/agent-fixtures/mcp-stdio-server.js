// A small MCP server for the agent MCP tests, run INSIDE a sandbox (the troupe-node image, no
// network, no node_modules): newline-delimited JSON-RPC 2.0 on stdin/stdout, written without the
// SDK so it needs nothing but node. Tools: `add` (a + b), `crash` (exits mid-call, without an
// answer), `hang` (never answers). Each start appends a line to ./mcp-starts.log, so a test can
// count starts and see that the server ran in the sandbox's workspace.
'use strict';
const fs = require('node:fs');
const readline = require('node:readline');

fs.appendFileSync('mcp-starts.log', `${process.pid}\n`);

const tools = [
  {
    name: 'add',
    description: 'Add two numbers.',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
      additionalProperties: false,
    },
  },
  { name: 'crash', description: 'Exit mid-call.', inputSchema: { type: 'object', properties: {} } },
  { name: 'hang', description: 'Never answer.', inputSchema: { type: 'object', properties: {} } },
];

const send = (msg) => process.stdout.write(`${JSON.stringify(msg)}\n`);
const reply = (id, result) => send({ jsonrpc: '2.0', id, result });

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === '') return;
  const msg = JSON.parse(line);
  if (msg.id === undefined) return; // notifications (initialized, cancelled)
  switch (msg.method) {
    case 'initialize':
      return reply(msg.id, {
        protocolVersion: msg.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'test-calc', version: '1.0.0' },
      });
    case 'ping':
      return reply(msg.id, {});
    case 'tools/list':
      return reply(msg.id, { tools });
    case 'tools/call': {
      const { name, arguments: args } = msg.params;
      if (name === 'add') {
        return reply(msg.id, { content: [{ type: 'text', text: String(args.a + args.b) }] });
      }
      if (name === 'crash') {
        process.stderr.write('calc: crashing on purpose\n');
        process.exit(3);
      }
      if (name === 'hang') return undefined;
      return send({
        jsonrpc: '2.0',
        id: msg.id,
        error: { code: -32602, message: `no tool ${name}` },
      });
    }
    default:
      return send({
        jsonrpc: '2.0',
        id: msg.id,
        error: { code: -32601, message: 'unknown method' },
      });
  }
});
