import { randomBytes } from 'node:crypto';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { TroupeClient } from '@troupe/client';
import { Coordinator, DriverRegistry } from '@troupe/coordinator';
import { NodeAgent, type NodeAgentOptions } from '@troupe/node-agent';
import { ensureDocker, waitFor } from '@troupe/testkit';

/**
 * Starts a coordinator under `coordinatorNats` and a node agent per `agents` (each with its own
 * NATS user), waits until all of `agents`' host ids are schedulable, runs a `shell-tasks` job of
 * `tasks` (id → command) and returns each task's status; stops everything after.
 */
export async function runShellJobUnderUsers(options: {
  cluster: string;
  coordinatorNats: { servers: string; user: string; pass: string };
  agents: NodeAgentOptions[];
  tasks: Record<string, string>;
}): Promise<Record<string, string>> {
  await ensureDocker();
  const token = randomBytes(24).toString('hex');
  const coordinator = await Coordinator.start(
    {
      cluster: options.cluster,
      nats: options.coordinatorNats,
      metrics: { port: null },
      shutdownGraceMs: 0,
      grpc: { host: '127.0.0.1', port: 0, token },
    },
    { drivers: registerBuiltinDrivers(new DriverRegistry()) },
  );
  const agents: NodeAgent[] = [];
  const client = new TroupeClient({
    address: `127.0.0.1:${coordinator.grpcPort}`,
    token,
    timeoutMs: 20_000,
  });
  try {
    for (const agent of options.agents) {
      agents.push(
        await NodeAgent.start({ slots: { sandbox: 2 }, shutdownGraceMs: 2_000, ...agent }),
      );
    }
    const hostIds = agents.map((a) => a.hostId);
    await waitFor(
      () => {
        const ids = coordinator.registry?.schedulable().map((h) => h.info.hostId) ?? [];
        return hostIds.every((id) => ids.includes(id));
      },
      { timeoutMs: 30_000, message: `node agents ${hostIds.join(', ')} registered` },
    );
    const job = await client.submitJob(
      [
        'kind: shell-tasks',
        `concurrency: ${Object.keys(options.tasks).length}`,
        'tasks:',
        ...Object.entries(options.tasks).map(
          ([id, command]) => `  - {id: ${id}, command: ${JSON.stringify(command)}}`,
        ),
        '',
      ].join('\n'),
    );
    for await (const e of client.watch(job.jobId, { signal: AbortSignal.timeout(120_000) })) {
      if (e.type === 'JOB_FINISHED') break;
    }
    const results = await client.getResults(job.jobId);
    return Object.fromEntries(results.tasks.map((t) => [t.taskId, t.status]));
  } finally {
    client.close();
    for (const a of agents) await a.stop();
    await coordinator.stop();
  }
}
