// A host process for the evolve crash test: hosts the test-only evolve-search and evolve-island
// kinds (../evolve-search-actors.ts) with a JetStream journal and the test-only process
// evaluator on the toy suite, whose evaluations take --delay-s seconds each. The package's own
// TypeScript is compiled on load (register-ts.js); other workspaces are their built dist/ (run
// `npm run build`).
require('./register-ts');
const path = require('node:path');
const { connect } = require('@nats-io/transport-node');
const { ActorSystem } = require('@troupe/actors');
const { createEvolveActors } = require('../evolve-search-actors.ts');
const { createProcessEvaluate } = require('../process-evaluate.ts');
const { JetStreamJournalStore } = require('../../../src/jet-stream-journal-store.ts');
const { loadSearchTask, renderEvaluatorCommand } = require('../../../src/search-task-spec.ts');

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
