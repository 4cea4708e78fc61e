import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { ExitCode } from '../exit-codes';
import { textTable } from '../format';

/** `troupe nodes [--json]`: the registered node agents. */
export async function nodesCommand(ctx: CommandContext, opts: { json?: boolean }): Promise<number> {
  const nodes = await ctx.client().listNodes({ signal: ctx.signal });
  if (opts.json) {
    for (const n of nodes) println(ctx.io.stdout, JSON.stringify(n));
    return ExitCode.OK;
  }
  const rows = nodes.map((n) => [
    n.hostId,
    n.state.replace(/^NODE_/, ''),
    Object.keys(n.slots).length > 0
      ? Object.entries(n.slots)
          .map(([k, v]) => `${k} ${n.used[k] ?? 0}/${v}`)
          .join(', ')
      : n.kinds.join(', '),
    n.backends.join(',') || '-',
    String(n.cpu),
    `${n.memMb}`,
    n.lastHeartbeatUnixMs ? new Date(n.lastHeartbeatUnixMs).toISOString().slice(11, 19) : '-',
  ]);
  println(
    ctx.io.stdout,
    textTable(
      ['HOST', 'STATE', 'SLOTS (USED/TOTAL)', 'BACKENDS', 'CPU', 'MEM MB', 'HEARTBEAT'],
      rows,
    ),
  );
  return ExitCode.OK;
}

/** `troupe drain <hostId> [--reason r]`: stops placing new work on a node. */
export async function drainCommand(
  ctx: CommandContext,
  hostId: string,
  opts: { reason?: string },
): Promise<number> {
  const node = await ctx.client().drainNode(hostId, opts.reason ?? '', { signal: ctx.signal });
  println(ctx.io.stdout, `node ${node.hostId}: ${node.state.replace(/^NODE_/, '').toLowerCase()}`);
  return ExitCode.OK;
}
