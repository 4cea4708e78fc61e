import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { defineActor } from '@troupe/actors';
import { waitFor } from '@troupe/testkit';
import { z } from 'zod';

/** A child process whose stdout lines are collected. */
export interface Child {
  child: ChildProcess;
  lines: string[];
  waitForLine(pred: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Spawns `node <script> ...args`, collecting stdout lines (stderr lines prefixed `ERR`). */
export function spawnNode(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Child {
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const lines: string[] = [];
  const collect = (prefix: string) => {
    let buf = '';
    return (d: Buffer) => {
      buf += d.toString();
      const parts = buf.split('\n');
      buf = parts.pop()!;
      lines.push(...parts.map((p) => prefix + p));
    };
  };
  child.stdout.on('data', collect(''));
  child.stderr.on('data', collect('ERR '));
  return {
    child,
    lines,
    async waitForLine(pred, timeoutMs = 15_000) {
      return waitFor(() => lines.find(pred), {
        timeoutMs,
        message: `no matching line from ${path.basename(script)}; output:\n${lines.join('\n')}`,
      });
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
  };
}

/** Starts a cluster-mode host process hosting the 'worker' kind. */
export async function startHost(
  server: string,
  cluster: string,
  hostId: string,
  slots = 100,
): Promise<Child> {
  const host = spawnNode(path.join(__dirname, '../fixtures/cluster-host.js'), [
    server,
    cluster,
    hostId,
    String(slots),
  ]);
  await host.waitForLine((l) => l === 'READY');
  return host;
}

/** An in-process actor that appends each posted entry to its state (idle for 10 minutes). */
export const Tally = defineActor({
  kind: 'tally',
  state: z.object({ entries: z.array(z.string()) }),
  initialState: () => ({ entries: [] as string[] }),
  messages: { add: z.object({ entry: z.string() }) },
  handlers: { add: (_ctx, msg, state) => ({ state: { entries: [...state.entries, msg.entry] } }) },
  idleTimeoutMs: 600_000,
});
