import { z } from 'zod';
import { type ApplyEnvironment, serverMain, type ServerProcess } from '@troupe/proto';

// serverMain drives a server binary; here the process is a recorder (argv, env, output, signal
// handlers, exit codes) and the server a plain object, so every path is checked without a real
// process exit.

const Schema = z.object({ port: z.int().min(0).default(1) }).strict();
const applyEnvironment: ApplyEnvironment = (raw, env) =>
  env['PORT'] === undefined
    ? { config: raw, issues: [] }
    : /^\d+$/.test(env['PORT'])
      ? { config: { ...raw, port: Number(env['PORT']) }, issues: [] }
      : { config: raw, issues: [`PORT: ${env['PORT']} is not a number`] };

function recorder(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const handlers = new Map<string, (() => void)[]>();
  let exitCode: number | undefined;
  let exited: () => void = () => undefined;
  const exit = new Promise<void>((r) => (exited = r));
  const proc: ServerProcess = {
    argv: ['node', 'main.js', ...args],
    env,
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t) },
    on: (signal, listener) => handlers.set(signal, [...(handlers.get(signal) ?? []), listener]),
    exit: (code: number): never => {
      exitCode ??= code;
      exited();
      return undefined as never;
    },
  };
  return {
    proc,
    out,
    err,
    exit,
    exitCode: () => exitCode,
    signal: (name: string) => (handlers.get(name) ?? []).forEach((h) => h()),
    listening: () => handlers.size > 0,
  };
}

function logger() {
  const lines: [string, object][] = [];
  return {
    lines,
    info: (fields: object, message: string) => lines.push([message, fields]),
    error: (fields: object, message: string) => lines.push([message, fields]),
  };
}

function server(stopResult: () => Promise<void> = () => Promise.resolve()) {
  let stops = 0;
  return { stops: () => stops, stop: () => (stops++, stopResult()) };
}

const run = (
  p: ReturnType<typeof recorder>,
  start: (config: { port: number }) => Promise<{ stop(): Promise<void> }>,
  log = logger(),
) =>
  serverMain({
    name: 'troupe-x',
    process: p.proc,
    schema: Schema,
    applyEnvironment,
    logger: () => log,
    start,
  });

describe('serverMain', () => {
  test('--help prints the usage and exits 0', () => {
    const p = recorder(['--help']);
    run(p, () => Promise.reject(new Error('not started')));
    expect(p.out.join('')).toBe('usage: troupe-x [--config file.yaml]\n');
    expect(p.exitCode()).toBe(0);
  });

  test('a bad argument or config prints every problem and exits 2 before starting', async () => {
    const started = jest.fn(() => Promise.resolve(server()));
    const bad = recorder(['--bogus']);
    run(bad, started);
    expect(bad.err.join('')).toBe(
      "troupe-x: unknown argument '--bogus' (usage: troupe-x [--config file.yaml])\n",
    );
    expect(bad.exitCode()).toBe(2);

    const env = recorder(['--config', '/nonexistent/x.yaml'], { PORT: 'many' });
    run(env, started);
    await env.exit;
    expect(env.err).toHaveLength(1);
    expect(env.err[0]).toMatch(/^troupe-x: cannot read config \/nonexistent\/x\.yaml: /);
    expect(env.exitCode()).toBe(2);

    const variable = recorder([], { PORT: 'many' });
    run(variable, started);
    await variable.exit;
    expect(variable.err.join('')).toBe('troupe-x: PORT: many is not a number\n');
    expect(variable.exitCode()).toBe(2);
    expect(started).not.toHaveBeenCalled();
  });

  test('a failed start prints the stack and exits 1', async () => {
    const p = recorder([]);
    run(p, () => Promise.reject(new Error('no NATS')));
    await p.exit;
    expect(p.err.join('')).toMatch(/^troupe-x: Error: no NATS\n\s+at /);
    expect(p.exitCode()).toBe(1);
  });

  test('once started, the first SIGTERM stops the server and exits 0; a second is ignored', async () => {
    const p = recorder([], { PORT: '7' });
    const log = logger();
    const s = server();
    let port: number | undefined;
    run(
      p,
      (config) => {
        port = config.port;
        return Promise.resolve(s);
      },
      log,
    );
    await waitUntil(p.listening);
    expect(port).toBe(7);
    expect(p.exitCode()).toBeUndefined();
    p.signal('SIGTERM');
    p.signal('SIGINT');
    await p.exit;
    expect(p.exitCode()).toBe(0);
    expect(s.stops()).toBe(1);
    expect(log.lines).toEqual([['stopping', { signal: 'SIGTERM' }]]);
  });

  test('a failed stop is logged and exits 1', async () => {
    const p = recorder([]);
    const log = logger();
    const failure = new Error('drain failed');
    run(p, () => Promise.resolve(server(() => Promise.reject(failure))), log);
    await waitUntil(p.listening);
    p.signal('SIGINT');
    await p.exit;
    expect(p.exitCode()).toBe(1);
    expect(p.err).toEqual([]);
    expect(log.lines).toEqual([
      ['stopping', { signal: 'SIGINT' }],
      ['stop failed', { err: failure }],
    ]);
  });
});

/** Waits for `cond` over microtask/macrotask turns (no timers to race: each turn re-checks). */
async function waitUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  if (!cond()) throw new Error('condition never held');
}
