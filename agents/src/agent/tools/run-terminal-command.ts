import { z } from 'zod';
import { AgentToolName } from '../agent-tool-name';
import { defineTool } from './agent-tool';
import { argvText, MAX_COMMAND_BYTES } from './tool-text';
import { SandboxArgSchema } from '../../sandboxes/sandbox-template';

/** `run_terminal_command`: a shell command in the sandbox, foreground or background. */
export const runTerminalCommand = defineTool({
  name: AgentToolName.RUN_TERMINAL_COMMAND,
  description:
    'Run a shell command in a sandbox workspace (foreground with timeout), or start one in the background and poll/kill it by job_id.',
  schema: z
    .strictObject({
      command: argvText(MAX_COMMAND_BYTES)
        .optional()
        .describe('Shell command (run with /bin/sh -c)'),
      action: z
        .enum(['run', 'poll', 'kill'])
        .default('run')
        .describe('run a command, or poll/kill a background job'),
      background: z.boolean().default(false).describe('start in the background; returns job_id'),
      // The sandbox's task ids are at most 128 characters.
      job_id: argvText(128).optional().describe('background job to poll or kill'),
      timeout_s: z.int().min(1).max(3_600).default(120).describe('foreground timeout, seconds'),
      sandbox: SandboxArgSchema,
    })
    .superRefine((a, ctx) => {
      if (a.action === 'run' && a.command === undefined) {
        ctx.addIssue({ code: 'custom', path: ['command'], message: 'required when action is run' });
      }
      if (a.action !== 'run' && a.job_id === undefined) {
        ctx.addIssue({ code: 'custom', path: ['job_id'], message: 'required for poll and kill' });
      }
    }),
  effect: true,
  sandbox: true,
  async run({ sandbox, signal }, a) {
    const port = await sandbox(a.sandbox);
    if (a.action === 'poll' || a.action === 'kill') {
      // The schema requires job_id for poll and kill.
      const jobId = a.job_id as string;
      const job =
        a.action === 'poll'
          ? await port.poll(jobId, { signal })
          : await port.kill(jobId, { signal });
      return {
        ok: true,
        content: `job ${job.jobId}: ${job.state}${job.exitCode !== undefined ? `, exit code ${job.exitCode}` : ''}${section('stdout', job.stdout)}${section('stderr', job.stderr)}`,
      };
    }
    // The schema requires a command to run.
    const command = a.command as string;
    if (a.background) {
      const jobId = await port.startBackground(command, { signal });
      return {
        ok: true,
        content: `started background job ${jobId}; use action "poll" or "kill" with job_id "${jobId}"`,
      };
    }
    const r = await port.exec(command, { timeoutMs: a.timeout_s * 1000, signal });
    return {
      ok: r.exitCode === 0 && !r.timedOut,
      content: `exit code: ${r.exitCode}${r.timedOut ? ` (timed out after ${a.timeout_s} s, killed)` : ''}${section('stdout', r.stdout)}${section('stderr', r.stderr)}`,
    };
  },
});

function section(name: string, text: string): string {
  return text.length > 0 ? `\n--- ${name} ---\n${text}` : '';
}
