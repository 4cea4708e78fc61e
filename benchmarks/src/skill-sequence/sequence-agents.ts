import { type RefFactory } from '@troupe/actors';
import type { BudgetHook, ChatMessage, LlmClient, ModelRegistry } from '@troupe/llm';
import { firstPythonBlock } from './code-action';
import type { SequenceSkill } from './sequence-library';
import type { Scenario, SequenceTask, SkillSequenceConfig } from './skill-sequence-spec';

/** What one action did, as the agent sees it. */
export interface ActionObservation {
  /** The REPL's verdict on the code (`false`: it raised, or there was no code). */
  ok: boolean;
  /** Output and error, truncated with a reminder. */
  observation: string;
  /** Whether `complete_task` has been called. */
  completed: boolean;
}

/** What an agent gets for one task: the live world and a way to act in it. */
export interface SequenceAgentContext {
  scenario: Scenario;
  task: SequenceTask;
  config: SkillSequenceConfig;
  /** Most actions for this task. */
  maxSteps: number;
  /** The supervisor `init` reported (name, email). */
  supervisor: Record<string, unknown>;
  /** Library skills that passed `check_skill` in this world: already defined in the namespace. */
  skills: readonly SequenceSkill[];
  /**
   * Runs one action (undefined: a reply without code, which still costs a step) and returns
   * what the agent observes.
   */
  act(code: string | undefined): Promise<ActionObservation>;
  /** Whether the task is over (completed, or the step cap reached). */
  finished(): boolean;
  /** The task's solution source (only for the `gold` agent). */
  solution(): Promise<string>;
  signal: AbortSignal;
}

/** What an agent's run cost. */
export interface SequenceAgentResult {
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
}

/** An agent kind of the `skill-sequence` driver. */
export interface SequenceAgent {
  run(ctx: SequenceAgentContext): Promise<SequenceAgentResult>;
}

const free: SequenceAgentResult = { promptTokens: 0, completionTokens: 0, costUsd: 0 };

/** Executes the task's solution file as its one action: every task must pass. */
export const goldSequenceAgent: SequenceAgent = {
  async run(ctx) {
    await ctx.act(await ctx.solution());
    return free;
  },
};

/** Does nothing: every task must fail (an untouched world). */
export const noneSequenceAgent: SequenceAgent = { run: async () => free };

/** What a model agent's calls need to be charged to the job's budget. */
export interface SequenceBudgetContext {
  jobId: string;
  taskId: string;
  budgetScope?: string;
  refs: RefFactory;
}

/** The models a cluster offers the `skill-sequence` driver's model agent. */
export interface SequenceModelAccess {
  client: Pick<LlmClient, 'chat'>;
  models: Pick<ModelRegistry, 'has' | 'names'>;
  /** Budget hook of a task's calls (the job's ledger scope). @default the client's */
  budgetFor?: (ctx: SequenceBudgetContext) => BudgetHook | undefined;
}

/** The system prompt of the model agent. */
export const SEQUENCE_SYSTEM_PROMPT = [
  'You solve tasks in an app world by writing Python, one action at a time.',
  'Each reply must contain exactly one fenced ```python block: it is executed in a persistent',
  'Python namespace (like a notebook) and you see its printed output. Only the first block of a',
  'reply runs. The object `apis` is pre-bound: discover apps with',
  '`apis.api_docs.show_app_descriptions()`, their APIs with',
  '`apis.api_docs.show_api_descriptions(app_name=...)` and one API with',
  '`apis.api_docs.show_api_doc(app_name=..., api_name=...)`. Apps need',
  '`apis.<app>.login(username=<email>, password=...)`; passwords come from',
  '`apis.supervisor.show_account_passwords()`. Print what you need to see.',
  'Write reusable functions (def) for steps you may need again: they are kept for later tasks.',
  'When the task is done call `apis.supervisor.complete_task(answer=...)` (answer=None when the',
  'task asks for no answer).',
].join('\n');

/** The first user message: the task, the supervisor, and the skills already defined. */
export function taskPrompt(
  ctx: Pick<SequenceAgentContext, 'scenario' | 'task' | 'supervisor' | 'skills'>,
): string {
  const parts = [
    `Scenario: ${ctx.scenario.description}`,
    `Supervisor: ${JSON.stringify(ctx.supervisor)}`,
    `Task: ${ctx.task.instruction.trim()}`,
  ];
  if (ctx.skills.length > 0) {
    parts.push(
      'These functions from earlier tasks are already defined in your namespace and were checked ' +
        'against this world; call them instead of rewriting them:',
      ...ctx.skills.map((s) => `\`\`\`python\n${s.source.trimEnd()}\n\`\`\``),
    );
  }
  return parts.join('\n\n');
}

/**
 * A model in SAGE's code-action loop: each reply's first ```python block is the action and its
 * observation the next user turn, until the task is completed or `maxSteps` actions. Each task
 * starts a fresh conversation; what carries over between the tasks of a scenario is the skill
 * library. Calls go through the cluster's {@link LlmClient} (registry, retries, budget).
 */
export function modelSequenceAgent(
  access: SequenceModelAccess,
  run: { budget?: BudgetHook; metadata: Readonly<Record<string, string>> },
): SequenceAgent {
  return {
    async run(ctx) {
      const agent = ctx.config.agent;
      if (agent.model === undefined) throw new Error('model agent without a model');
      const messages: ChatMessage[] = [
        { role: 'system', content: SEQUENCE_SYSTEM_PROMPT },
        { role: 'user', content: taskPrompt(ctx) },
      ];
      const usage = { promptTokens: 0, completionTokens: 0, costUsd: 0 };
      while (!ctx.finished()) {
        const reply = await access.client.chat({
          model: agent.model,
          messages,
          signal: ctx.signal,
          ...(agent.maxTokens !== undefined ? { maxTokens: agent.maxTokens } : {}),
          ...(run.budget ? { budget: run.budget } : {}),
          metadata: { ...run.metadata, sequenceTask: ctx.task.id },
        });
        usage.promptTokens += reply.usage.promptTokens;
        usage.completionTokens += reply.usage.completionTokens;
        usage.costUsd += reply.costUsd;
        const text = reply.message.content ?? '';
        messages.push({ role: 'assistant', content: text });
        const o = await ctx.act(firstPythonBlock(text));
        messages.push({ role: 'user', content: o.observation });
      }
      return usage;
    },
  };
}
