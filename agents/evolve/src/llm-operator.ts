import { TroupeError } from '@troupe/proto';
import { type Direction } from './direction';
import { extractFirstCodeBlock } from './extract-code-block';
import { type OperatorKind } from './operator-kind';
import { buildOperatorPrompt, type OperatorChatMessage } from './operator-prompts';
import {
  type OperatorContext,
  type OperatorParent,
  type Proposal,
  type SearchOperators,
} from './search-operators';

/** What a chat function returns: the reply text, optionally with its cost. */
export type ChatReply = string | { text: string; costUsd?: number };

/**
 * One model call: messages in, reply text out. Wire it to `LlmClient.chat` (take
 * `result.message.content`, and the cost from the call record) or to a scripted function in tests.
 */
export type ChatFunction = (
  messages: OperatorChatMessage[],
  options: { signal: AbortSignal },
) => Promise<ChatReply>;

/** What a caller passes to {@link LlmOperator}. */
export interface LlmOperatorOptions {
  /** The model call. */
  chat: ChatFunction;
  /** What the task is. @default '' */
  description?: string;
  /** Whether higher or lower scores are better. */
  direction: Direction;
  /** Most characters of one program (or stderr tail) put into a prompt. @default 20000 */
  maxProgramChars?: number;
}

/**
 * LLM-backed Draft, Improve, Crossover and Debug: each builds a prompt (see
 * {@link buildOperatorPrompt}), calls the chat function once and takes the first fenced code
 * block of the reply as the child program (in the language of the seed or parent). A reply
 * without a code block is an operator failure (`INVALID_ARGUMENT`), recorded as `no_code`.
 */
export class LlmOperator implements SearchOperators {
  readonly canDebug = true;
  private readonly chat: ChatFunction;
  private readonly description: string;
  private readonly direction: Direction;
  private readonly maxProgramChars: number;

  constructor(options: LlmOperatorOptions) {
    this.chat = options.chat;
    this.description = options.description ?? '';
    this.direction = options.direction;
    this.maxProgramChars = options.maxProgramChars ?? 20_000;
  }

  draft(ctx: OperatorContext): Promise<Proposal> {
    const language = ctx.seeds[0]?.language ?? 'python';
    return this.call('draft', language, ctx, []);
  }

  improve(parent: OperatorParent, ctx: OperatorContext): Promise<Proposal> {
    return this.call('improve', parent.program.language, ctx, [parent]);
  }

  crossover(a: OperatorParent, b: OperatorParent, ctx: OperatorContext): Promise<Proposal> {
    return this.call('crossover', a.program.language, ctx, [a, b]);
  }

  debug(buggy: OperatorParent, ctx: OperatorContext): Promise<Proposal> {
    return this.call('debug', buggy.program.language, ctx, [buggy]);
  }

  private async call(
    kind: Exclude<OperatorKind, 'seed'>,
    language: string,
    ctx: OperatorContext,
    parents: OperatorParent[],
  ): Promise<Proposal> {
    const messages = buildOperatorPrompt(
      kind,
      {
        description: this.description,
        direction: this.direction,
        language,
        maxProgramChars: this.maxProgramChars,
      },
      { seeds: ctx.seeds, parents },
    );
    const reply = await this.chat(messages, { signal: ctx.signal });
    const text = typeof reply === 'string' ? reply : reply.text;
    const costUsd = typeof reply === 'string' ? 0 : (reply.costUsd ?? 0);
    const code = extractFirstCodeBlock(text);
    if (code === undefined || code.trim() === '') {
      throw new TroupeError(
        'INVALID_ARGUMENT',
        `${kind}: the model reply has no fenced code block`,
        {
          details: { costUsd },
        },
      );
    }
    return { program: { language, source: code.endsWith('\n') ? code : `${code}\n` }, costUsd };
  }
}
