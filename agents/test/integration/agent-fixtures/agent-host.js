// A cluster-mode host process for the agent tests: hosts the `agent` kind with an LlmClient on
// the given model registry (the test's FakeOpenAI), registers with the coordinator and
// heartbeats. Uses the built packages (run `npm run build`). Prints READY.
// A model call of a run with a `budgetScope` is charged to the coordinator's budget ledger in that
// scope (as `troupe run --models` does); calls without one are not charged anywhere.
const { connect } = require('@nats-io/transport-node');
const { ActorSystem } = require('@troupe/actors');
const { LlmClient, ModelRegistry } = require('@troupe/llm');
const { TrajectoryStore, createAgentActor } = require('@troupe/agents');
const { BudgetLedger, LedgerBudgetHook } = require('@troupe/coordinator');

const [servers, cluster, hostId, registryJson] = process.argv.slice(2);
// Replicas of what this host creates first (TROUPE_REPLICAS, as the servers read it).
const replicas = Number(process.env.TROUPE_REPLICAS || 1);

async function main() {
  const nc = await connect({ servers: servers.split(',') });
  const registry = new ModelRegistry(JSON.parse(registryJson));
  // Fast retries: the 429-storm test scripts several 429s in a row.
  const llm = new LlmClient({ registry, retry: { initialBackoffMs: 20, maxBackoffMs: 200 } });
  const trajectories = new TrajectoryStore({ connection: nc, cluster, replicas });
  const slot = {};
  const budget = {
    reserve: (amount, context) =>
      context.metadata && context.metadata.budgetScope
        ? slot.hook.reserve(amount, context)
        : { reservationId: 'uncharged' },
    settle: (id, actual) => (id === 'uncharged' ? undefined : slot.hook.settle(id, actual)),
    release: (id) => (id === 'uncharged' ? undefined : slot.hook.release(id)),
  };
  // A middleware plugin for the middleware tests: blocks terminal commands matching `pattern`.
  const plugins = {
    'deny-command': (options) => {
      const pattern = options.pattern === undefined ? '\\brm\\b' : options.pattern;
      if (typeof pattern !== 'string') throw new Error('pattern: must be a string');
      const re = new RegExp(pattern);
      return {
        name: 'deny-command',
        beforeTool: (_ctx, call) =>
          call.name === 'run_terminal_command' && re.test(call.argumentsText)
            ? { block: `commands matching /${pattern}/ are not allowed here` }
            : undefined,
      };
    },
  };
  const agent = createAgentActor({ llm, trajectories, budget, idleTimeoutMs: 5_000, plugins });
  const system = await ActorSystem.start({
    cluster,
    connection: nc,
    hostId,
    hosting: [agent],
    placement: 'none',
    replicas,
  });
  slot.hook = new LedgerBudgetHook({
    ledger: new BudgetLedger(system),
    scope: 'cluster',
    holder: hostId,
  });
  process.stdout.write('READY\n');
  const stop = () => system.shutdown({ graceMs: 1000 }).then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack) + '\n');
  process.exit(1);
});
