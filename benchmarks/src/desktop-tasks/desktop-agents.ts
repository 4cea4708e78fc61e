import { type RefFactory, type UntypedActorRef } from '@troupe/actors';
import type {
  BudgetHook,
  ChatMessage,
  LlmClient,
  ModelRegistry,
  ToolDefinition,
} from '@troupe/llm';
import type { DesktopTask, DesktopTasksConfig, ScriptStep } from './desktop-task-spec';

/** One entry of a run's action log. */
export interface LoggedStep {
  step: number;
  /** The action (or `{run_command}`) as the agent gave it. */
  action: Record<string, unknown>;
  /** `ok`, or the environment's refusal (an invalid action is logged, not fatal). */
  outcome: string;
  /** Artifact path of the screenshot after the step, when taken. */
  screenshot?: string;
}

/** What an agent gets: the live environment and a way to act on it that logs every step. */
export interface DesktopAgentContext {
  task: DesktopTask;
  config: DesktopTasksConfig;
  env: UntypedActorRef;
  /** Performs and logs one step (screenshot included); returns the outcome text. */
  step(action: ScriptStep): Promise<string>;
  /** A screenshot as a data URL (for models). */
  screenshotUrl(): Promise<string>;
  signal: AbortSignal;
}

/** What an agent run reports (the task's evaluator scores the machine, not this). */
export interface DesktopAgentResult {
  stopReason: 'done' | 'fail' | 'max_steps' | 'idle' | 'script_end';
  promptTokens: number;
  completionTokens: number;
  /** What the model calls cost (registry prices). @default 0 */
  costUsd?: number;
}

/** An agent kind of the `desktop-tasks` driver. */
export interface DesktopAgent {
  run(ctx: DesktopAgentContext): Promise<DesktopAgentResult>;
}

const zeroUsage = { promptTokens: 0, completionTokens: 0 };

/** Replays the task's gold script. */
export const goldAgent: DesktopAgent = {
  async run(ctx) {
    let stop: DesktopAgentResult['stopReason'] = 'script_end';
    for (const s of ctx.task.gold) {
      await ctx.step(s);
      if ('action_type' in s && (s.action_type === 'DONE' || s.action_type === 'FAIL')) {
        stop = s.action_type === 'DONE' ? 'done' : 'fail';
        break;
      }
    }
    return { stopReason: stop, ...zeroUsage };
  },
};

/** Does nothing: the baseline every task must fail. */
export const noneAgent: DesktopAgent = {
  run: async () => ({ stopReason: 'idle', ...zeroUsage }),
};

const ACTION_TYPES = [
  'MOVE_TO',
  'CLICK',
  'MOUSE_DOWN',
  'MOUSE_UP',
  'RIGHT_CLICK',
  'DOUBLE_CLICK',
  'DRAG_TO',
  'SCROLL',
  'TYPING',
  'PRESS',
  'KEY_DOWN',
  'KEY_UP',
  'HOTKEY',
  'WAIT',
  'DONE',
  'FAIL',
];

const COMPUTER_TOOL: ToolDefinition = {
  name: 'computer',
  description:
    'Perform one computer_13 action on the desktop. DONE when the task is complete, FAIL when ' +
    'it cannot be done. Coordinates are screen pixels.',
  parameters: {
    type: 'object',
    properties: {
      action_type: { type: 'string', enum: ACTION_TYPES },
      x: { type: 'integer' },
      y: { type: 'integer' },
      button: { type: 'string', enum: ['left', 'middle', 'right'] },
      num_clicks: { type: 'integer' },
      dx: { type: 'integer' },
      dy: { type: 'integer' },
      text: { type: 'string' },
      key: { type: 'string' },
      keys: { type: 'array', items: { type: 'string' } },
      seconds: { type: 'number' },
    },
    required: ['action_type'],
  },
};

const RUN_COMMAND_TOOL: ToolDefinition = {
  name: 'run_command',
  description: 'Run a shell command as the desktop user; returns its exit code and output.',
  parameters: {
    type: 'object',
    properties: { command: { type: 'string' } },
    required: ['command'],
  },
};

/** What a model agent's calls need: the job's identity and budget scope, and the refs to reach the ledger. */
export interface DesktopBudgetContext {
  jobId: string;
  taskId: string;
  /** The job's ledger scope (`job:<jobId>`), when the job has a budget. */
  budgetScope?: string;
  refs: RefFactory;
}

/** The models a cluster offers the `desktop-tasks` driver's model agents. */
export interface DesktopModelAccess {
  /** The client (registry, retries, rate limits, call records). */
  client: Pick<LlmClient, 'chat'>;
  /** The registry, to refuse an unknown `agent.model` when the job is submitted. */
  models: Pick<ModelRegistry, 'has' | 'names'>;
  /** Budget hook of a task's calls (the job's ledger scope). @default the client's */
  budgetFor?: (ctx: DesktopBudgetContext) => BudgetHook | undefined;
}

/** What the model agent's run needs beyond the agent context. */
export interface ModelAgentRun {
  budget?: BudgetHook;
  metadata: Readonly<Record<string, string>>;
}

/**
 * A model in a computer-use loop: each turn it sees the latest screenshot (an image part of a user
 * turn, sent in the OpenAI chat format) and answers with tool calls — `computer` (one
 * `computer_13` action) and, when the task allows, `run_command`. It stops on DONE or FAIL, a turn
 * without tool calls, or `maxSteps` turns. Calls go through the cluster's {@link LlmClient}: the
 * model registry, retries, call records and the job's budget.
 */
export function modelAgent(access: DesktopModelAccess, run: ModelAgentRun): DesktopAgent {
  return {
    async run(ctx) {
      const agent = ctx.config.agent;
      if (agent.kind !== 'model') throw new Error('model agent without a model config');
      const tools = ctx.task.allowCommands ? [COMPUTER_TOOL, RUN_COMMAND_TOOL] : [COMPUTER_TOOL];
      const screen = async (text: string): Promise<ChatMessage> => ({
        role: 'user',
        content: [
          { type: 'text', text },
          { type: 'image', url: await ctx.screenshotUrl() },
        ],
      });
      const messages: ChatMessage[] = [
        {
          role: 'system',
          content:
            `You operate a Linux desktop (${ctx.config.width}x${ctx.config.height}) with the ` +
            'tools. Finish with the computer action DONE, or FAIL if the task is impossible.',
        },
        await screen(ctx.task.instruction),
      ];
      let promptTokens = 0;
      let completionTokens = 0;
      let costUsd = 0;
      for (let turn = 0; turn < agent.maxSteps; turn++) {
        const reply = await access.client.chat({
          model: agent.model,
          messages,
          tools,
          signal: ctx.signal,
          ...(run.budget ? { budget: run.budget } : {}),
          metadata: { ...run.metadata, step: turn + 1 },
        });
        promptTokens += reply.usage.promptTokens;
        completionTokens += reply.usage.completionTokens;
        costUsd += reply.costUsd;
        const calls = reply.message.toolCalls;
        messages.push(reply.message);
        if (calls.length === 0)
          return { stopReason: 'idle', promptTokens, completionTokens, costUsd };
        let terminal: 'done' | 'fail' | undefined;
        for (const call of calls) {
          let args: Record<string, unknown>;
          try {
            const parsed: unknown = JSON.parse(call.argumentsText);
            if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
              throw new Error('not an object');
            }
            args = parsed as Record<string, unknown>;
          } catch {
            messages.push({
              role: 'tool',
              toolCallId: call.id,
              content: `${call.name}: arguments must be a JSON object`,
            });
            continue;
          }
          const step: ScriptStep =
            call.name === 'run_command' && ctx.task.allowCommands
              ? { run_command: typeof args['command'] === 'string' ? args['command'] : '' }
              : {
                  ...args,
                  action_type: typeof args['action_type'] === 'string' ? args['action_type'] : '',
                };
          const outcome = await ctx.step(step);
          messages.push({ role: 'tool', toolCallId: call.id, content: outcome });
          if (args['action_type'] === 'DONE' && outcome === 'ok') terminal = 'done';
          if (args['action_type'] === 'FAIL' && outcome === 'ok') terminal = 'fail';
        }
        if (terminal) return { stopReason: terminal, promptTokens, completionTokens, costUsd };
        // Tool messages carry text only: the new screen goes in a user turn.
        messages.push(await screen('The screen now:'));
      }
      return { stopReason: 'max_steps', promptTokens, completionTokens, costUsd };
    },
  };
}
