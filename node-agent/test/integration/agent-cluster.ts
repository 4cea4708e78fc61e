import { createHash } from 'node:crypto';
import { ActorSystem } from '@troupe/actors';
import { Coordinator } from '@troupe/coordinator';
import { NodeAgent, type NodeAgentOptions } from '@troupe/node-agent';
import { type TroupeError } from '@troupe/proto';
import { type NatsServerHandle, randomClusterName, waitFor } from '@troupe/testkit';
import tar from 'tar-stream';
import { dockerFixture, type DockerFixture, removeLeftovers } from './helpers';

/** One cluster: a coordinator (fast heartbeats, no metrics port) and a client actor system. */
export interface AgentCluster {
  cluster: string;
  server: NatsServerHandle;
  coordinator: Coordinator;
  /** A client with no hosted kinds (as a job driver would be). */
  client: ActorSystem;
  fx: DockerFixture;
  /** Starts a node agent of this cluster (in-process) and waits until it is schedulable. */
  startAgent(options?: Partial<NodeAgentOptions>): Promise<NodeAgent>;
  /** Options a node agent of this cluster needs (for a child process too). */
  agentOptions(options?: Partial<NodeAgentOptions>): NodeAgentOptions;
  /** Waits until host `hostId` is registered and alive. */
  waitRegistered(hostId: string): Promise<void>;
  /** Stops the agents started here, the client and the coordinator; removes leftovers. */
  stop(): Promise<void>;
}

/** Starts a coordinator and a client for a fresh cluster on `server`. */
export async function startAgentCluster(server: NatsServerHandle): Promise<AgentCluster> {
  const fx = await dockerFixture();
  const cluster = fx.cluster;
  const coordinator = await Coordinator.start({
    cluster,
    nats: { servers: server.url },
    heartbeatMs: 200,
    missedHeartbeats: 3,
    sweepIntervalMs: 500,
    metrics: { port: null },
  });
  const client = await ActorSystem.start({ cluster, servers: server.url });
  const agents: NodeAgent[] = [];
  const agentOptions = (options: Partial<NodeAgentOptions> = {}): NodeAgentOptions => ({
    cluster,
    hostId: 'agent-1',
    nats: { servers: server.url },
    shutdownGraceMs: 2_000,
    ...options,
  });
  const waitRegistered = async (hostId: string): Promise<void> => {
    await waitFor(() => coordinator.registry?.schedulable().some((h) => h.info.hostId === hostId), {
      timeoutMs: 15_000,
      message: `host ${hostId} registered with the coordinator`,
    });
  };
  return {
    cluster,
    server,
    coordinator,
    client,
    fx,
    agentOptions,
    waitRegistered,
    startAgent: async (options = {}) => {
      const agent = await NodeAgent.start(agentOptions(options));
      agents.push(agent);
      await waitRegistered(agent.hostId);
      return agent;
    },
    stop: async () => {
      for (const a of agents) await a.stop().catch(() => undefined);
      await client.shutdown();
      await coordinator.stop();
      await removeLeftovers(fx.docker, cluster);
    },
  };
}

/** The rejection of `p` (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<TroupeError> {
  try {
    await p;
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a rejection');
}

/** A tar of text files. */
export async function tarOf(files: Record<string, string>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, content] of Object.entries(files)) {
    pack.entry({ name, mode: 0o755 }, Buffer.from(content));
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as unknown as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

/** sha256 hex. */
export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

export { randomClusterName };
