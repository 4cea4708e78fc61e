import { type UntypedActorRef } from '@troupe/actors';
import { delay } from '@troupe/proto';
import type { DesktopTask, Getter, Metric } from './desktop-task-spec';

/** What the evaluator read and how it scored it. */
export interface Evaluation {
  score: number;
  /** The value the getter read (trimmed to 2 000 characters). */
  value: string;
}

const ask = async (env: UntypedActorRef, msg: string, payload: unknown, signal: AbortSignal) =>
  env.ask(msg, payload, { timeoutMs: 60_000, signal });

async function run(env: UntypedActorRef, command: string, signal: AbortSignal): Promise<string> {
  const r = (await ask(env, 'runCommand', { cmd: command, timeoutMs: 30_000 }, signal)) as {
    stdout: string;
  };
  return r.stdout;
}

const quote = (s: string): string => `'${s.replaceAll("'", "'\\''")}'`;

/** Reads machine state as the getter says. */
export async function readState(
  env: UntypedActorRef,
  getter: Getter,
  signal: AbortSignal,
): Promise<string> {
  switch (getter.type) {
    case 'file':
      return run(env, `cat -- ${quote(getter.path)} 2>/dev/null || true`, signal);
    case 'command':
      return run(env, getter.command, signal);
    case 'cell': {
      // ssconvert writes every sheet's first sheet as CSV; pick the cell by row and column.
      const col = [...getter.cell.replace(/[0-9]/g, '')].reduce(
        (n, ch) => n * 26 + ch.charCodeAt(0) - 64,
        0,
      );
      const row = Number(getter.cell.replace(/[A-Z]/g, ''));
      const csv = await run(
        env,
        `ssconvert --export-type=Gnumeric_stf:stf_csv ${quote(getter.path)} fd://1 2>/dev/null || true`,
        signal,
      );
      const line = csv.split('\n')[row - 1] ?? '';
      return (line.split(',')[col - 1] ?? '').replace(/^"|"$/g, '');
    }
    case 'config': {
      const text = await run(env, `cat -- ${quote(getter.path)} 2>/dev/null || true`, signal);
      let section = '';
      for (const raw of text.split('\n')) {
        const line = raw.trim();
        const header = /^\[(.*)\]$/.exec(line);
        if (header) section = header[1] ?? '';
        else if (section === getter.section && line.startsWith(`${getter.key}=`)) {
          return line.slice(getter.key.length + 1);
        }
      }
      return '';
    }
    case 'windows': {
      const w = (await ask(env, 'windows', {}, signal)) as {
        windows: { title: string }[];
        focused: string | null;
      };
      return getter.all ? w.windows.map((x) => x.title).join('\n') : (w.focused ?? '');
    }
    case 'none':
      return '';
  }
}

/** Scores a value in [0, 1]. `lastAction` is the agent's final action type, if any. */
export function score(metric: Metric, value: string, lastAction: string | undefined): number {
  switch (metric.type) {
    case 'exact':
      return (metric.trim ? value.trim() === metric.expected.trim() : value === metric.expected)
        ? 1
        : 0;
    case 'contains':
      return metric.expected.every((e) => value.includes(e)) ? 1 : 0;
    case 'regex':
      return new RegExp(metric.pattern).test(value) ? 1 : 0;
    case 'number': {
      const n = Number(value.trim());
      return value.trim() !== '' &&
        Number.isFinite(n) &&
        Math.abs(n - metric.expected) <= metric.tolerance
        ? 1
        : 0;
    }
    case 'infeasible':
      return lastAction === 'FAIL' ? 1 : 0;
  }
}

/**
 * Scores a machine with a task's evaluator: reads the state, and re-reads for up to `settleMs`
 * while the metric fails (applications saving late). A feasible task the agent gave up on
 * (`lastAction` FAIL) scores 0 whatever the machine shows (OSWorld's rule).
 */
export async function judgeMachine(
  env: UntypedActorRef,
  evaluator: DesktopTask['evaluator'],
  lastAction: string | undefined,
  signal: AbortSignal,
): Promise<Evaluation> {
  const { getter, metric, settleMs } = evaluator;
  const until = Date.now() + settleMs;
  let value = await readState(env, getter, signal);
  let s = score(metric, value, lastAction);
  while (s < 1 && Date.now() < until && metric.type !== 'infeasible') {
    await delay(250, signal);
    value = await readState(env, getter, signal);
    s = score(metric, value, lastAction);
  }
  if (metric.type !== 'infeasible' && lastAction === 'FAIL') s = 0;
  return { score: s, value };
}
