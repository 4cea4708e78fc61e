import { readFileSync } from 'node:fs';
import { waitFor } from './wait-for';

/**
 * Freezes process `pid` with SIGSTOP and resolves once it is stopped. `kill` only delivers the
 * signal: a request sent at once can still be answered by a process that has not taken it yet
 * (seen with `nats-server`, whose stopped-server tests then measured a 1 ms answer). Linux only
 * (reads `/proc/<pid>/stat`). Resume the process with `process.kill(pid, 'SIGCONT')`.
 *
 * @throws {@link WaitTimeoutError} when the process is not stopped within `timeoutMs`.
 */
export async function stopProcess(pid: number, timeoutMs = 5_000): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  await waitFor(() => processState(pid) === 'T', {
    timeoutMs,
    message: `process ${pid} stopped`,
  });
}

/** The state letter of process `pid` (`T`: stopped by a signal). */
function processState(pid: number): string | undefined {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name, in parentheses, may contain spaces: the state follows its last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
}
