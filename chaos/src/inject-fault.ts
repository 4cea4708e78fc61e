import { ensureDocker, waitFor } from '@troupe/testkit';
import { type ChaosCluster, dockerdPid } from './chaos-cluster';
import { type Fault, FaultKind, type FaultTarget } from './fault-schedule';

/** A fault in place, until {@link heal}. */
export interface InjectedFault {
  /** What it hit (a `leader` target resolved to its coordinator). */
  readonly target: FaultTarget;
  /** Ends the fault; resolves with the time (ms) it healed: server back, process restarted. */
  heal(): Promise<number>;
}

/** Injects `fault` into the cluster (see {@link FaultKind} for what each kind does). */
export async function injectFault(c: ChaosCluster, fault: Fault): Promise<InjectedFault> {
  const target: FaultTarget =
    fault.target.role === 'leader'
      ? { role: 'coordinator', index: await c.leaderIndex() }
      : fault.target;
  return { ...(await inject(c, fault.kind, target)), target };
}

async function inject(
  c: ChaosCluster,
  kind: FaultKind,
  target: FaultTarget,
): Promise<Omit<InjectedFault, 'target'>> {
  switch (kind) {
    case FaultKind.KILL: {
      if (target.role === 'nats') {
        const server = c.natsServer(target.index);
        await server.kill();
        return {
          heal: async () => {
            await server.restart();
            return Date.now();
          },
        };
      }
      await c.killMember(target);
      return {
        heal: async () => {
          await c.restartMember(target);
          return Date.now();
        },
      };
    }
    case FaultKind.STOP: {
      const pid = c.pidOf(target);
      process.kill(pid, 'SIGSTOP');
      return {
        heal: () => {
          process.kill(pid, 'SIGCONT');
          return Promise.resolve(Date.now());
        },
      };
    }
    case FaultKind.NATS_RESTART: {
      if (target.role !== 'nats') throw new RangeError('nats-restart needs a nats target');
      await c.natsServer(target.index).restart();
      const healedAt = Date.now();
      return { heal: () => Promise.resolve(healedAt) };
    }
    case FaultKind.PARTITION: {
      if (target.role !== 'node-agent') throw new RangeError('partition needs a node agent');
      const proxies = c.proxiesOf(target.index);
      for (const p of proxies) p.cut();
      return {
        heal: () => {
          for (const p of proxies) p.restore();
          return Promise.resolve(Date.now());
        },
      };
    }
    case FaultKind.DOCKER_RESTART: {
      // Long profile only (TROUPE_CHAOS_DOCKER_RESTART=0 leaves it out): it stops every
      // container on the machine.
      const pid = dockerdPid();
      process.kill(pid, 'SIGTERM');
      await waitFor(() => !alive(pid), { timeoutMs: 60_000, message: 'dockerd stopped' });
      return {
        heal: async () => {
          await ensureDocker();
          return Date.now();
        },
      };
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
