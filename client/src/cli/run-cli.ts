import { Command, CommanderError, Option } from 'commander';
import { type CliIo, println } from './cli-io';
import { CommandContext } from './command-context';
import { artifactCommand } from './commands/artifact';
import { cancelCommand } from './commands/cancel';
import { deleteCommand } from './commands/delete';
import { agentHostCommand } from './commands/agent-host';
import { coordinatorCommand } from './commands/coordinator';
import { dashboardCommand } from './commands/dashboard';
import { devCommand } from './commands/dev';
import { jobsCommand } from './commands/jobs';
import { nodeAgentCommand } from './commands/node-agent';
import { drainCommand, nodesCommand } from './commands/nodes';
import { resultsCommand } from './commands/results';
import { rolloutCommand } from './commands/rollout';
import { runCommand } from './commands/run';
import { submitCommand } from './commands/submit';
import { validateCommand } from './commands/validate';
import { watchCommand } from './commands/watch';
import { type GlobalOptions } from './connection';
import { ExitCode, exitCodeOf, oneLine } from './exit-codes';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * Runs the `troupe` CLI on `argv` (without node and the script) and returns the exit code.
 * Errors are printed as one line on stderr (`troupe: …`); see {@link ExitCode}.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const interrupt = new AbortController();
  const removeInterrupt = io.onInterrupt(() => interrupt.abort('interrupted'));
  let code: number = ExitCode.OK;
  let ctx: CommandContext | undefined;
  const program = new Command('troupe')
    .description('Troupe: submit, watch and inspect jobs; run a single-machine cluster')
    .option(
      '--address <host:port>',
      'job API address (env TROUPE_ADDRESS; default: the dev cluster, else 127.0.0.1:50051)',
    )
    .option('--token <token>', 'bearer token (env TROUPE_TOKEN)')
    .option('--token-file <file>', 'file holding the bearer token (env TROUPE_TOKEN_FILE)')
    .option('--tls-ca <file>', 'use TLS, trusting this CA (env TROUPE_TLS_CA)')
    .option('--timeout <ms>', 'deadline of each call in milliseconds', undefined)
    .option(
      '--data-dir <dir>',
      'data directory of the embedded cluster (env TROUPE_DATA_DIR; default ./.troupe)',
    )
    .showHelpAfterError('(run troupe --help for usage)')
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: (s, write) => write(s.startsWith('error:') ? `troupe: ${s.slice(7)}` : s),
    })
    .exitOverride();
  const action =
    <A extends unknown[]>(fn: (c: CommandContext, ...args: A) => Promise<number>) =>
    async (...args: A): Promise<void> => {
      ctx = new CommandContext(io, program.opts<GlobalOptions>(), interrupt.signal);
      code = await fn(ctx, ...args);
    };

  program
    .command('dev')
    .description('run the embedded single-machine cluster until Ctrl-C')
    .option('--port <port>', 'job API port (0 = any free port)', '50051')
    .option('--host <host>', 'job API interface', '127.0.0.1')
    .option('--nats-port <port>', 'nats-server port (default: a free port)')
    .option('--cluster <name>', 'cluster name', 'dev')
    .option('--sandbox-slots <n>', 'sandboxes the node agent runs at once (default: 2 per core)')
    .option('--process-backend', 'run sandboxes as plain processes (UNSAFE, no Docker needed)')
    .option('--log-level <level>', 'log level of <data-dir>/troupe.log', 'info')
    .option('--models <file>', 'models file (model registry): host agents, enable LLM operators')
    .option(
      '--skills <dir>',
      'skill folders (<dir>/<name>/SKILL.md) for the agents (with --models)',
    )
    .option('--dashboard-port <port>', 'web dashboard port (0 = any free port)', '0')
    .option('--no-dashboard', 'do not serve the web dashboard')
    .option('--no-dashboard-actions', 'serve the dashboard read-only (no cancel/drain)')
    .action(action((c, opts: Parameters<typeof devCommand>[1]) => devCommand(c, opts)));
  program
    .command('dashboard')
    .description('serve the live web dashboard of a cluster (login: the job API token)')
    .option('--port <port>', 'HTTP port (0 = any free port)', '8470')
    .option('--host <host>', 'HTTP interface', '127.0.0.1')
    .option('--actions', 'let logged-in users cancel jobs and drain nodes')
    .option('--secure-cookie', 'mark the session cookie Secure (behind a TLS proxy)')
    .action(action((c, opts: Parameters<typeof dashboardCommand>[1]) => dashboardCommand(c, opts)));
  program
    .command('coordinator')
    .description('serve a coordinator with the built-in drivers and the job API (deployments)')
    .option('--config <file>', 'YAML config (environment variables override it)')
    .option('--ready-file <file>', 'file written once serving, removed on stop (health checks)')
    .option('--models <file>', 'models file (model registry): host agents, enable LLM operators')
    .option('--dashboard-port <port>', 'also serve the web dashboard on this port (off by default)')
    .option('--dashboard-host <host>', 'web dashboard interface', '127.0.0.1')
    .option('--dashboard-actions', 'let dashboard users cancel jobs and drain nodes')
    .action(
      action((c, opts: Parameters<typeof coordinatorCommand>[1]) => coordinatorCommand(c, opts)),
    );
  program
    .command('node-agent')
    .description('serve a node agent hosting sandboxes (deployments)')
    .option('--config <file>', 'YAML config (environment variables override it)')
    .option('--ready-file <file>', 'file written once registered, removed on stop (health checks)')
    .action(action((c, opts: Parameters<typeof nodeAgentCommand>[1]) => nodeAgentCommand(c, opts)));
  program
    .command('agent-host')
    .description(
      'serve an agent host: agent sessions with the models of a models file (deployments)',
    )
    .option('--config <file>', 'YAML config (environment variables override it)')
    .option('--ready-file <file>', 'file written once registered, removed on stop (health checks)')
    .option('--models <file>', 'models file (model registry; default TROUPE_MODELS_FILE)')
    .option('--skills <dir>', 'skill folders (<dir>/<name>/SKILL.md) pushed to the skill store')
    .action(action((c, opts: Parameters<typeof agentHostCommand>[1]) => agentHostCommand(c, opts)));
  program
    .command('validate <target>')
    .description(
      'dry-run evolve suites (a suite folder or an evolve job): layout, markers, each seed once under the grader',
    )
    .option('--no-run', 'static checks only (no seed run, no Docker)')
    .option('--log-level <level>', 'log level of the embedded cluster', 'info')
    .action(
      action((c, target: string, opts: Parameters<typeof validateCommand>[2]) =>
        validateCommand(c, target, opts),
      ),
    );
  program
    .command('run <spec>')
    .description('start an embedded cluster, run one job, print its results, stop')
    .option('--json', 'print the results as JSON')
    .option('--sandbox-slots <n>', 'sandboxes run at once (default: 2 per core)')
    .option('--process-backend', 'run sandboxes as plain processes (UNSAFE, no Docker needed)')
    .option('--keep-data', 'keep the run data directory')
    .option('--html <file>', 'also write an HTML report (artifacts copied beside it)')
    .option('--log-level <level>', 'log level of the run log', 'info')
    .option('--models <file>', 'models file (model registry): host agents, enable LLM operators')
    .option(
      '--skills <dir>',
      'skill folders (<dir>/<name>/SKILL.md) for the agents (with --models)',
    )
    .action(
      action((c, spec: string, opts: Parameters<typeof runCommand>[2]) =>
        runCommand(c, spec, opts),
      ),
    );
  program
    .command('submit <spec>')
    .description('submit a job spec (YAML or JSON); prints the job id')
    .option('--watch', 'follow the job until it finishes')
    .option('--json', 'print the job (or, with --watch, the events) as JSON')
    .option('--idempotency-key <key>', 'a retry with the same key returns the same job')
    .option('--resume <jobId>', 're-run the unfinished tasks of a finished job')
    .action(
      action((c, spec: string, opts: Parameters<typeof submitCommand>[2]) =>
        submitCommand(c, spec, opts),
      ),
    );
  program
    .command('jobs')
    .description('list jobs, newest first')
    .option('--state <state>', 'only this state (repeatable)', collect)
    .option('--label <key=value>', 'only jobs with this label (repeatable)', collect)
    .option('--limit <n>', 'at most this many jobs', '50')
    .option('--json', 'one JSON object per line')
    .action(action((c, opts: Parameters<typeof jobsCommand>[1]) => jobsCommand(c, opts)));
  program
    .command('watch <jobId>')
    .description('follow a job: progress bar with done/total, pass rate, spend and ETA')
    .option('--json', 'print every event as a JSON line (for machines)')
    .option('--from <sequence>', 'start at this event sequence')
    .action(
      action((c, jobId: string, opts: Parameters<typeof watchCommand>[2]) =>
        watchCommand(c, jobId, opts),
      ),
    );
  program
    .command('results <jobId>')
    .description('per-task results and the aggregate')
    .addOption(
      new Option('--format <format>', 'output format')
        .choices(['table', 'json', 'html'])
        .default('table'),
    )
    .option('-o, --output <file>', 'write to a file instead of stdout')
    .action(
      action((c, jobId: string, opts: Parameters<typeof resultsCommand>[2]) =>
        resultsCommand(c, jobId, opts),
      ),
    );
  program
    .command('rollout')
    .description(
      'RL rollouts: episodes of suite tasks against a policy endpoint, graded; prints JSON',
    )
    .requiredOption('--endpoint <url>', 'OpenAI-compatible base URL of the policy server')
    .requiredOption('--model <id>', 'model id sent to the policy server')
    .requiredOption('--suite <dir>', 'issue-resolution suite folder (on the coordinator host)')
    .option('--task <id>', 'a task of the suite (repeatable; default every task)', collect)
    .option('--samples <n>', 'episodes per task', '1')
    .option('--temperature <x>', 'sampling temperature, 0..2')
    .option('--top-p <x>', 'nucleus sampling mass, (0, 1]')
    .option('--seed <n>', 'sampling seed')
    .option('--logprobs', 'keep per-token log-probabilities in the trajectories')
    .option('--top-logprobs <n>', 'alternatives per token, 0..20 (with --logprobs)')
    .option('--max-tokens <n>', 'completion cap per model call')
    .option('--max-steps <n>', 'model calls per episode')
    .option('--concurrency <n>', 'episodes at once')
    .option('--no-wait', 'return once the job is queued (then: troupe watch / results)')
    .option('--timeout-ms <ms>', 'deadline of the call; the job is cancelled when it passes')
    .action(action((c, opts: Parameters<typeof rolloutCommand>[1]) => rolloutCommand(c, opts)));
  program
    .command('cancel <jobId>')
    .description('cancel a job (running tasks are stopped, their sandboxes destroyed)')
    .option('--reason <text>', 'why', 'user')
    .option('--json', 'print the job as JSON')
    .action(
      action((c, jobId: string, opts: Parameters<typeof cancelCommand>[2]) =>
        cancelCommand(c, jobId, opts),
      ),
    );
  program
    .command('delete <jobId...>')
    .description(
      'delete finished jobs: record, results, events, artifacts (cancel a running one first)',
    )
    .option('--json', 'one JSON object per job')
    .action(
      action((c, jobIds: string[], opts: Parameters<typeof deleteCommand>[2]) =>
        deleteCommand(c, jobIds, opts),
      ),
    );
  program
    .command('nodes')
    .description('list the node agents')
    .option('--json', 'one JSON object per line')
    .action(action((c, opts: Parameters<typeof nodesCommand>[1]) => nodesCommand(c, opts)));
  program
    .command('drain <hostId>')
    .description('stop placing new work on a node')
    .option('--reason <text>', 'why')
    .action(
      action((c, hostId: string, opts: Parameters<typeof drainCommand>[2]) =>
        drainCommand(c, hostId, opts),
      ),
    );
  program
    .command('artifact <jobId> <path>')
    .description('download an artifact of a job (to stdout, or --output)')
    .option('-o, --output <file>', 'write to this file')
    .action(
      action((c, jobId: string, p: string, opts: Parameters<typeof artifactCommand>[3]) =>
        artifactCommand(c, jobId, p, opts),
      ),
    );

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version output are not errors; commander already printed its message.
      return err.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
    }
    println(io.stderr, `troupe: ${oneLine(err)}`);
    return exitCodeOf(err);
  } finally {
    ctx?.close();
    removeInterrupt();
  }
}
