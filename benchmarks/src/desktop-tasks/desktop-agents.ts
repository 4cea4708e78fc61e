import { type UntypedActorRef } from '@troupe/actors';
import OpenAI from 'openai';
import type {
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
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

const COMPUTER_TOOL: ChatCompletionTool = {
  type: 'function',
  function: {
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
  },
};

const RUN_COMMAND_TOOL: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'run_command',
    description: 'Run a shell command as the desktop user; returns its exit code and output.',
    parameters: {
      type: 'object',
      properties: { command: { type: 'string' } },
      required: ['command'],
    },
  },
};

/** Where the model agent's chat completions go. */
export interface ModelEndpoint {
  /** OpenAI-compatible base URL (`…/v1`). */
  baseURL: string;
  apiKey: string;
}

/**
 * A model in a computer-use loop: each turn it sees the latest screenshot (an image content part
 * in the OpenAI chat format) and answers with tool calls — `computer` (one `computer_13` action)
 * and, when the task allows, `run_command`. It stops on DONE or FAIL, a turn without tool calls,
 * or `maxSteps` turns.
 */
export function modelAgent(endpoint: ModelEndpoint): DesktopAgent {
  const client = new OpenAI({ baseURL: endpoint.baseURL, apiKey: endpoint.apiKey, maxRetries: 2 });
  return {
    async run(ctx) {
      const agent = ctx.config.agent;
      if (agent.kind !== 'model') throw new Error('model agent without a model config');
      const tools = ctx.task.allowCommands ? [COMPUTER_TOOL, RUN_COMMAND_TOOL] : [COMPUTER_TOOL];
      const messages: ChatCompletionMessageParam[] = [
        {
          role: 'system',
          content:
            `You operate a Linux desktop (${ctx.config.width}x${ctx.config.height}) with the ` +
            'tools. Finish with the computer action DONE, or FAIL if the task is impossible.',
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: ctx.task.instruction },
            { type: 'image_url', image_url: { url: await ctx.screenshotUrl() } },
          ],
        },
      ];
      let promptTokens = 0;
      let completionTokens = 0;
      for (let turn = 0; turn < agent.maxSteps; turn++) {
        const reply = await client.chat.completions.create(
          { model: agent.model, messages, tools },
          { signal: ctx.signal },
        );
        promptTokens += reply.usage?.prompt_tokens ?? 0;
        completionTokens += reply.usage?.completion_tokens ?? 0;
        const msg = reply.choices[0]?.message;
        const calls = (msg?.tool_calls ?? []).filter((c) => c.type === 'function');
        messages.push({
          role: 'assistant',
          content: msg?.content ?? null,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
        });
        if (calls.length === 0) return { stopReason: 'idle', promptTokens, completionTokens };
        let terminal: 'done' | 'fail' | undefined;
        for (const call of calls) {
          let args: Record<string, unknown>;
          try {
            args = JSON.parse(call.function.arguments) as Record<string, unknown>;
          } catch {
            messages.push({
              role: 'tool',
              tool_call_id: call.id,
              content: 'arguments are not JSON',
            });
            continue;
          }
          const step: ScriptStep =
            call.function.name === 'run_command' && ctx.task.allowCommands
              ? { run_command: typeof args['command'] === 'string' ? args['command'] : '' }
              : {
                  ...args,
                  action_type: typeof args['action_type'] === 'string' ? args['action_type'] : '',
                };
          const outcome = await ctx.step(step);
          messages.push({ role: 'tool', tool_call_id: call.id, content: outcome });
          if (args['action_type'] === 'DONE' && outcome === 'ok') terminal = 'done';
          if (args['action_type'] === 'FAIL' && outcome === 'ok') terminal = 'fail';
        }
        if (terminal) return { stopReason: terminal, promptTokens, completionTokens };
        // Tool messages carry text only: the new screen goes in a user message.
        messages.push({
          role: 'user',
          content: [
            { type: 'text', text: 'The screen now:' },
            { type: 'image_url', image_url: { url: await ctx.screenshotUrl() } },
          ],
        });
      }
      return { stopReason: 'max_steps', promptTokens, completionTokens };
    },
  };
}
