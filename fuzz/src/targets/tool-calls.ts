import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import {
  ActorSandboxPort,
  AgentToolName,
  MemoryStore,
  parseAgentTemplate,
  runToolCall,
  SkillStore,
  type ToolContext,
} from '@troupe/agents';
import { Coordinator } from '@troupe/coordinator';
import { NodeAgent } from '@troupe/node-agent';
import { ErrorCode, TroupeError } from '@troupe/proto';
import { randomClusterName, startNatsServer, waitFor } from '@troupe/testkit';
import fc from 'fast-check';
import { nastyString, wrongValue } from '../arbitraries';
import type { FuzzTarget } from '../fuzz-target';
import { judgeFieldMessage } from '../oracle';

/** One model tool call: the tool's name and its arguments as the model's JSON text. */
export interface ToolCallCase {
  name: string;
  argumentsText: string;
  how: string;
}

/** Known-valid arguments of every tool the fuzzed agent holds. */
const VALID: Record<string, Record<string, unknown>[]> = {
  [AgentToolName.RUN_TERMINAL_COMMAND]: [
    { command: 'echo hi > note.txt && cat note.txt' },
    { command: 'sleep 0.1', background: true },
    { action: 'poll', job_id: 'job-1' },
    { action: 'kill', job_id: 'job-1' },
    { command: 'ls', timeout_s: 5, sandbox: 'main' },
  ],
  [AgentToolName.VIEW_FILE]: [
    { path: 'seed.txt' },
    { path: 'seed.txt', start_line: 2, end_line: 3 },
  ],
  [AgentToolName.EDIT_FILE]: [{ path: 'seed.txt', old_text: 'two', new_text: 'two' }],
  [AgentToolName.WRITE_FILE]: [{ path: 'out/new.txt', content: 'hello' }],
  [AgentToolName.FINISH_TASK]: [{ summary: 'done' }],
  [AgentToolName.LOAD_SKILL]: [{ name: 'demo' }, { name: 'demo', file: 'notes.md' }],
  [AgentToolName.MEMORY_WRITE]: [{ title: 'a fact', text: 'the sky is blue', tags: ['x'] }],
  [AgentToolName.MEMORY_SEARCH]: [{ query: 'sky', limit: 3 }],
  [AgentToolName.MEMORY_READ]: [{ key: 'a-fact' }, { key: 'nope', version: 1 }],
};
const TOOLS = Object.keys(VALID);

/** Paths a model (or a prompt injection) might send. */
const hostilePath = fc.oneof(
  nastyString,
  fc.constantFrom(
    '../../../../etc/passwd',
    '/etc/shadow',
    '/proc/self/environ',
    '..',
    '.',
    '/',
    'seed.txt/..',
    'a/../../b',
    '~/x',
    'seed.txt\u0000.png',
    '/workspace/../etc/passwd',
    'dir/',
    `${'d/'.repeat(500)}f`,
    'x'.repeat(5_000),
  ),
);

/** A field of `args` replaced (by a wrong value, a hostile path), removed, or an extra one. */
function mutated(tool: string): fc.Arbitrary<ToolCallCase> {
  const seeds = VALID[tool] as Record<string, unknown>[];
  return fc
    .record({
      seed: fc.constantFrom(...seeds),
      op: fc.constantFrom('replace', 'replace', 'path', 'remove', 'extra'),
      field: fc.constantFrom(
        ...new Set(seeds.flatMap((s) => Object.keys(s))),
        'path',
        'sandbox',
        '__proto__',
      ),
      value: wrongValue,
      hostile: hostilePath,
    })
    .map(({ seed, op, field, value, hostile }) => {
      const args: Record<string, unknown> = { ...seed };
      if (op === 'remove') delete args[field];
      else if (op === 'path') args[field] = hostile;
      else if (op === 'extra') args[`x_${field}`] = value;
      else args[field] = value;
      return {
        name: tool,
        argumentsText: JSON.stringify(args) ?? '',
        how: `${tool}: ${op} ${field}`,
      };
    });
}

/** Tool calls: valid ones, mutated ones, whole-value garbage, broken JSON, unknown tools. */
const toolCalls: fc.Arbitrary<ToolCallCase> = fc.oneof(
  {
    arbitrary: fc
      .constantFrom(...TOOLS.flatMap((t) => (VALID[t] ?? []).map((a) => [t, a] as const)))
      .map(([name, a]) => ({ name, argumentsText: JSON.stringify(a), how: `${name}: valid` })),
    weight: 2,
  },
  { arbitrary: fc.constantFrom(...TOOLS).chain(mutated), weight: 8 },
  {
    arbitrary: fc.tuple(fc.constantFrom(...TOOLS), wrongValue).map(([name, v]) => ({
      name,
      argumentsText: JSON.stringify(v) ?? 'undefined',
      how: `${name}: whole value`,
    })),
    weight: 2,
  },
  {
    arbitrary: fc.tuple(fc.constantFrom(...TOOLS), nastyString).map(([name, text]) => ({
      name,
      argumentsText: text,
      how: `${name}: raw text`,
    })),
    weight: 1,
  },
  {
    arbitrary: fc.tuple(nastyString, fc.constantFrom('{}', '{"x":1}')).map(([name, text]) => ({
      name,
      argumentsText: text,
      how: 'unknown tool',
    })),
    weight: 1,
  },
);

const SEED_COMMANDS = new Set(
  Object.values(VALID)
    .flat()
    .map((a) => a['command'])
    .filter((c) => typeof c === 'string'),
);

/**
 * The process backend runs commands as the node agent's user on the host, with no isolation:
 * a generated command (`$(reboot)`) must not run, and a file tool must not write outside the
 * workspace. A case's effects are neutralised without changing what the schemas see: a command
 * that is not a seed becomes `printf %s '<it>'` (same type, still empty or holding a NUL when it
 * did), and a `write_file`/`edit_file` path loses its leading `/`, `~` and `..` segments under
 * `fuzzed/`. `view_file` keeps hostile paths: reading is harmless.
 */
export function defused(c: ToolCallCase): ToolCallCase {
  let args: unknown;
  try {
    args = JSON.parse(c.argumentsText);
  } catch {
    return c;
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return c;
  const a = { ...(args as Record<string, unknown>) };
  if (typeof a['command'] === 'string' && a['command'] !== '' && !SEED_COMMANDS.has(a['command'])) {
    a['command'] = `printf %s '${a['command'].replaceAll("'", "'\\''")}'`;
  }
  const writes = c.name === AgentToolName.WRITE_FILE || c.name === AgentToolName.EDIT_FILE;
  if (writes && typeof a['path'] === 'string' && a['path'] !== '') {
    a['path'] = `fuzzed/${a['path'].replaceAll('..', '__').replace(/^[/~]+/, '')}`;
  }
  return { ...c, argumentsText: JSON.stringify(a) };
}

/** Codes a tool may answer for a well-formed call it cannot carry out. */
const RUNTIME_CODES = ['NOT_FOUND', 'INVALID_ARGUMENT', 'FAILED_PRECONDITION', 'PERMISSION_DENIED'];

/**
 * Judges a tool outcome's error text (`error: …`): the runner's own answers (unknown tool, not
 * JSON), a schema error naming `arguments.<field>`, a tool's error naming an argument, or one of
 * {@link RUNTIME_CODES}; `INTERNAL`, `UNKNOWN`, `TIMEOUT` or an error naming nothing is wrong.
 */
export function judgeToolError(content: string): string | undefined {
  const text = content.replace(/^error: /, '');
  if (/^unknown tool '/.test(text) || /^the arguments of \S+ are not valid JSON/.test(text)) {
    return undefined;
  }
  const coded = /^([A-Z_]+): ([\s\S]*)$/.exec(text);
  if (coded) {
    const [, code, rest] = coded as unknown as [string, string, string];
    if (code === 'INVALID_ARGUMENT') {
      return judgeFieldMessage(rest, [], ['arguments', 'path', 'old_text', 'command', 'job']);
    }
    if (RUNTIME_CODES.includes(code)) return undefined;
    return `answered ${code}: ${rest.slice(0, 300)}`;
  }
  return judgeFieldMessage(text, [], ['arguments']);
}

/**
 * (f) Agent tool calls through `runToolCall` with the tools' own schemas, acting on a real
 * sandbox: a node agent (process backend) hosting the `sandbox` actor over a testkit
 * nats-server, reached through `ActorSandboxPort` as an agent's session reaches it, and the
 * cluster's real skill and memory stores. Every outcome is a success or an `error:` naming the
 * argument (or a runtime code such as `NOT_FOUND`); nothing throws, and `echo` still runs after.
 */
export const toolCallsTarget: FuzzTarget<ToolCallCase> = {
  name: 'tool-calls',
  description: "agent tool calls (runToolCall, the tools' schemas) on a real sandbox actor",
  async start() {
    const server = await startNatsServer();
    const cluster = randomClusterName();
    const rootDir = await mkdtemp(path.join(os.tmpdir(), 'troupe-fuzz-tools-'));
    const coordinator = await Coordinator.start({
      cluster,
      nats: { servers: server.url },
      metrics: { port: null },
      shutdownGraceMs: 1_000,
    });
    const agent = await NodeAgent.start({
      cluster,
      hostId: `fuzz-${cluster.slice(-6)}`,
      nats: { servers: server.url },
      backend: 'process',
      allowProcessBackend: true,
      processBackend: { rootDir },
      vm: { enabled: 'off' },
    });
    const nc: NatsConnection = await connect({ servers: server.url });
    const system = await ActorSystem.start({ cluster, connection: nc });
    const sandboxId = 'fuzz-main';
    // Placement answers once the coordinator has seen the node agent's first heartbeat.
    await waitFor(
      () =>
        system
          .refOf({ kind: 'sandbox', id: sandboxId })
          .ask(
            'create',
            {
              spec: { image: 'troupe-busybox:latest', files: { 'seed.txt': 'one\ntwo\nthree\n' } },
            },
            { timeoutMs: 60_000 },
          )
          .then(() => true),
      { timeoutMs: 120_000, intervalMs: 500, message: 'the fuzzed sandbox created' },
    );
    const port = new ActorSandboxPort({ refs: system, sandboxId });
    const skills = await SkillStore.open(nc, { cluster });
    await skills.put({
      name: 'demo',
      description: 'a skill for the fuzzer',
      instructions: 'Do the thing.',
      files: { 'notes.md': 'notes' },
    });
    const memory = await MemoryStore.open(nc, { cluster });
    const template = parseAgentTemplate({
      name: 'fuzzed',
      instruction: 'fuzz',
      model: 'fake-model',
      tools: [
        AgentToolName.RUN_TERMINAL_COMMAND,
        AgentToolName.VIEW_FILE,
        AgentToolName.EDIT_FILE,
        AgentToolName.WRITE_FILE,
      ],
      skills: ['demo'],
      memory: { scope: 'fuzz' },
    });
    const halt = new AbortController();
    let calls = 0;
    const context = (): ToolContext =>
      ({
        session: { template, run: { runId: 'fuzz-run', steps: calls } },
        sessionId: 'fuzz-session',
        signal: halt.signal,
        callId: `call-${++calls}`,
        assistantIndex: calls,
        sandbox: async (name?: string) => {
          // As a session answers a sandbox name it does not hold.
          if (name !== undefined && name !== 'main') {
            throw new TroupeError(
              ErrorCode.INVALID_ARGUMENT,
              `\`arguments.sandbox\`: no sandbox '${name}' (yours: main)`,
              { details: { field: 'arguments.sandbox' } },
            );
          }
          return port;
        },
        refs: system,
        models: { has: () => false, names: () => [] },
        subagents: undefined,
        skills,
        memory,
      }) as unknown as ToolContext;

    const call = async (c: ToolCallCase) =>
      runToolCall(
        { id: `c${calls}`, name: c.name, argumentsText: c.argumentsText },
        context(),
        halt.signal,
      );

    return {
      arbitrary: toolCalls,
      async run(input) {
        const c = defused(input);
        let outcome;
        try {
          outcome = await call(c);
        } catch (err) {
          return { wrong: `${c.how}: runToolCall threw ${String((err as Error)?.stack ?? err)}` };
        }
        if (typeof outcome?.content !== 'string') {
          return { wrong: `${c.how}: no outcome text` };
        }
        if (outcome.ok) return {};
        if (!outcome.content.startsWith('error: ')) {
          // A command that ran and failed (exit code ≠ 0) is a right answer.
          return c.name === AgentToolName.RUN_TERMINAL_COMMAND &&
            /^exit code: \d+/.test(outcome.content)
            ? {}
            : { wrong: `${c.how}: not ok, not an error: ${outcome.content.slice(0, 300)}` };
        }
        const wrong = judgeToolError(outcome.content);
        return wrong ? { wrong: `${c.how}: ${wrong}` } : {};
      },
      async checkValid() {
        const r = await call({
          name: AgentToolName.RUN_TERMINAL_COMMAND,
          argumentsText: JSON.stringify({ command: 'cat seed.txt >/dev/null && echo alive' }),
          how: 'valid',
        });
        return r.ok && r.content.includes('alive') ? undefined : `echo: ${r.content.slice(0, 300)}`;
      },
      async stop() {
        await system.shutdown();
        await nc.close();
        await agent.stop();
        await coordinator.stop();
        await server.stop();
        await rm(rootDir, { recursive: true, force: true });
      },
    };
  },
};
