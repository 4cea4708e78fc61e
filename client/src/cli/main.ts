#!/usr/bin/env node
/**
 * The `troupe` CLI: the only place that reads argv and the process environment (see
 * `run-cli.ts` for the commands and docs/cli.md for the exit codes).
 */
import { runCli } from './run-cli';

// A reader that stops early (`troupe results … | head`) closes the pipe: stop quietly, as
// shell tools do, instead of crashing on the write's EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

let interrupts = 0;
runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  onInterrupt(handler) {
    const onSignal = () => {
      // A second Ctrl-C does not wait for a clean stop.
      if (++interrupts > 1) process.exit(130);
      handler();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    return () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    };
  },
}).then(
  (code) => {
    process.exitCode = code;
    // Open handles (gRPC channels, timers) must not keep a finished command alive.
    setTimeout(() => process.exit(code), 100).unref();
  },
  (err: unknown) => {
    process.stderr.write(`troupe: ${(err as Error).message}\n`);
    process.exit(7);
  },
);
