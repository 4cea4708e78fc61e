import path from 'node:path';
import { defineActor } from '@troupe/actors';
import { spawnNodeProcess, type TestProcess } from '@troupe/test-cluster';
import { z } from 'zod';

/** Starts a cluster-mode host process hosting the 'worker' kind. */
export async function startHost(
  server: string,
  cluster: string,
  hostId: string,
  slots = 100,
): Promise<TestProcess> {
  const host = spawnNodeProcess(path.join(__dirname, '../fixtures/cluster-host.js'), [
    server,
    cluster,
    hostId,
    String(slots),
  ]);
  await host.waitForLine((l) => l === 'READY', 15_000);
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
