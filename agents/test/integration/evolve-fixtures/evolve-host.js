// A host process for the evolve crash test: hosts the evolve-search and evolve-island kinds
// with a JetStream journal and the (test-only) process evaluator on the toy suite, whose
// evaluations take --delay-s seconds each. Uses the built packages (run `npm run build`).
const path = require('node:path');
const { connect } = require('@nats-io/transport-node');
const { ActorSystem } = require('@troupe/actors');
const {
  JetStreamJournalStore,
  createEvolveActors,
  createProcessEvaluate,
  loadSearchTask,
  renderEvaluatorCommand,
} = require('@troupe/agents');

const [servers, cluster, hostId, delayS] = process.argv.slice(2);

async function main() {
  const suite = await loadSearchTask(path.join(__dirname, 'toy-suite'));
  const nc = await connect({ servers });
  const journal = new JetStreamJournalStore({ connection: nc, cluster });
  const evaluate = createProcessEvaluate({
    concurrency: 2,
    command: (req, program) => [
      ...renderEvaluatorCommand(suite.spec, {
        suite: suite.suiteDir,
        program,
        phase: req.phase,
        timeoutMs: req.timeoutMs,
      }),
      '--delay-s',
      delayS,
    ],
  });
  const { search, island } = createEvolveActors({ journal, evaluate });
  await ActorSystem.start({
    cluster,
    connection: nc,
    hostId,
    hosting: [search, island],
    sweepIntervalMs: 500,
  });
  process.stdout.write('READY\n');
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack) + '\n');
  process.exit(1);
});
