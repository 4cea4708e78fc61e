import { type RolloutRequest, type SamplingParams } from '@troupe/proto';
import { type CommandContext } from '../command-context';
import { CliError, ExitCode } from '../exit-codes';
import { intOption } from './int-option';

/** Options of `troupe rollout` as commander parses them. */
export interface RolloutCommandOptions {
  endpoint: string;
  model: string;
  suite: string;
  task?: string[];
  samples?: string;
  temperature?: string;
  topP?: string;
  seed?: string;
  logprobs?: boolean;
  topLogprobs?: string;
  maxTokens?: string;
  maxSteps?: string;
  concurrency?: string;
  wait?: boolean;
  timeoutMs?: string;
}

function numberOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) {
    throw new CliError(`${name} must be a number (got ${value})`, ExitCode.USAGE);
  }
  return n;
}

/**
 * `troupe rollout --endpoint URL --model ID --suite DIR [--task ID]... [sampling options]`: RL
 * rollouts through the job API's `Rollout` method; prints the response as JSON (rollouts with
 * reward, usage and trajectory). Ranges are checked by the server, which names the field.
 */
export async function rolloutCommand(
  ctx: CommandContext,
  opts: RolloutCommandOptions,
): Promise<number> {
  const seed = intOption('--seed', opts.seed);
  const topLogprobs = intOption('--top-logprobs', opts.topLogprobs);
  const maxTokens = intOption('--max-tokens', opts.maxTokens);
  const temperature = numberOption('--temperature', opts.temperature);
  const topP = numberOption('--top-p', opts.topP);
  const sampling: SamplingParams = {
    logprobs: opts.logprobs === true,
    ...(temperature !== undefined ? { temperature } : {}),
    ...(topP !== undefined ? { topP } : {}),
    ...(seed !== undefined ? { seed } : {}),
    ...(topLogprobs !== undefined ? { topLogprobs } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
  };
  const request: RolloutRequest = {
    endpoint: { baseUrl: opts.endpoint, model: opts.model },
    suite: opts.suite,
    taskIds: opts.task ?? [],
    samplesPerTask: intOption('--samples', opts.samples) ?? 0,
    sampling,
    maxSteps: intOption('--max-steps', opts.maxSteps) ?? 0,
    concurrency: intOption('--concurrency', opts.concurrency) ?? 0,
    noWait: opts.wait === false,
  };
  const timeoutMs = intOption('--timeout-ms', opts.timeoutMs);
  const res = await ctx.client().rollout(request, {
    signal: ctx.signal,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
  ctx.io.stdout.write(`${JSON.stringify(res, null, 2)}\n`);
  return ExitCode.OK;
}
