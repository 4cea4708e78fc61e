import type { ChatDelta } from '../chat-options';
import type { LlmUsage } from '../chat-result';
import { MalformedResponseError } from './malformed-response-error';
import { argumentsText, type ParsedCompletion, toUsage } from './parse-completion';

interface PartialToolCall {
  id: string | undefined;
  name: string | undefined;
  args: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reassembles a streamed completion from its chunks: content pieces concatenated, tool calls
 * gathered by `index` (id and name from the first piece carrying them, arguments appended),
 * the finish reason, and usage from the final chunk (`stream_options.include_usage`).
 */
export class StreamAssembler {
  private content: string | null = null;
  private readonly toolCalls: PartialToolCall[] = [];
  private finishReason: string | undefined;
  private usage: LlmUsage | undefined;
  private providerModel: string | undefined;
  /** Characters generated so far (content and tool calls), to estimate usage of a cut stream. */
  generatedChars = 0;

  constructor(private readonly requestId: string) {}

  /** Adds one chunk; returns the deltas it carried. Throws {@link MalformedResponseError}. */
  push(chunk: unknown, attempt: number): ChatDelta[] {
    if (!isRecord(chunk)) throw new MalformedResponseError('stream chunk is not an object');
    if (typeof chunk.model === 'string') this.providerModel = chunk.model;
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = toUsage(chunk.usage);
    const choices = chunk.choices;
    if (choices === undefined || choices === null) return [];
    if (!Array.isArray(choices))
      throw new MalformedResponseError('stream chunk `choices` is not an array');
    const deltas: ChatDelta[] = [];
    for (const choice of choices as unknown[]) {
      if (!isRecord(choice)) throw new MalformedResponseError('stream choice is not an object');
      // One completion is requested (n = 1); a server adding others is ignored.
      if (choice.index !== undefined && choice.index !== 0) continue;
      if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
      const delta = choice.delta;
      if (!isRecord(delta)) continue;
      if (typeof delta.content === 'string') {
        this.content = (this.content ?? '') + delta.content;
        this.generatedChars += delta.content.length;
        if (delta.content.length > 0)
          deltas.push({ kind: 'content', text: delta.content, attempt });
      }
      if (Array.isArray(delta.tool_calls)) {
        (delta.tool_calls as unknown[]).forEach((piece, position) => {
          deltas.push(this.addToolCallPiece(piece, position, attempt));
        });
      }
    }
    return deltas;
  }

  private addToolCallPiece(piece: unknown, position: number, attempt: number): ChatDelta {
    if (!isRecord(piece)) throw new MalformedResponseError('stream tool call is not an object');
    // Some servers leave `index` out when they send each call whole; fall back to the position.
    const index =
      typeof piece.index === 'number' && Number.isInteger(piece.index) && piece.index >= 0
        ? piece.index
        : position;
    let call = this.toolCalls[index];
    if (call === undefined) {
      call = { id: undefined, name: undefined, args: '' };
      this.toolCalls[index] = call;
    }
    const fn = isRecord(piece.function) ? piece.function : {};
    const delta: ChatDelta = { kind: 'tool_call', index, argumentsText: '', attempt };
    if (call.id === undefined && typeof piece.id === 'string' && piece.id !== '') {
      call.id = piece.id;
      delta.id = piece.id;
    }
    if (call.name === undefined && typeof fn.name === 'string' && fn.name !== '') {
      call.name = fn.name;
      delta.name = fn.name;
      this.generatedChars += fn.name.length;
    }
    const args = argumentsText(fn.arguments);
    call.args += args;
    delta.argumentsText = args;
    this.generatedChars += args.length;
    return delta;
  }

  /**
   * The completion; throws {@link MalformedResponseError} when the stream ended without a finish
   * reason (a cut stream must not pass for a complete reply) or with a nameless tool call.
   */
  finish(): ParsedCompletion {
    if (this.finishReason === undefined) {
      throw new MalformedResponseError('stream ended without a finish reason');
    }
    // Array.from visits holes (a call whose pieces never came), which map() would skip.
    const toolCalls = Array.from(this.toolCalls, (call, index) => {
      if (call === undefined || call.name === undefined) {
        throw new MalformedResponseError(`stream tool call #${index} has no function name`);
      }
      return {
        id: call.id ?? `call_${this.requestId}_${index}`,
        name: call.name,
        argumentsText: call.args,
      };
    });
    return {
      content: this.content,
      toolCalls,
      finishReason: this.finishReason,
      usage: this.usage,
      providerModel: this.providerModel,
    };
  }
}
