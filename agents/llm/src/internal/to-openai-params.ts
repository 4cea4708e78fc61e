import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type { ChatMessage, ToolChoice, ToolDefinition } from '../chat-message';
import type { ModelConfig } from '../model-config';

/** The parts of a chat call that shape the request body. */
export interface ParamsInput {
  messages: readonly ChatMessage[];
  tools?: readonly ToolDefinition[] | undefined;
  toolChoice?: ToolChoice | undefined;
  temperature?: number | undefined;
  topP?: number | undefined;
  seed?: number | undefined;
  logprobs?: boolean | undefined;
  topLogprobs?: number | undefined;
  maxTokens: number;
}

function toMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return {
        role: 'user',
        content:
          typeof message.content === 'string'
            ? message.content
            : message.content.map((part) =>
                part.type === 'text'
                  ? { type: 'text' as const, text: part.text }
                  : {
                      type: 'image_url' as const,
                      image_url: { url: part.url, ...(part.detail ? { detail: part.detail } : {}) },
                    },
              ),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        content: message.content,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.argumentsText },
        })),
      };
    }
  }
}

function toTool(tool: ToolDefinition): ChatCompletionTool {
  return {
    type: 'function',
    function: {
      name: tool.name,
      parameters: tool.parameters,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      ...(tool.strict === undefined ? {} : { strict: tool.strict }),
    },
  };
}

function toToolChoice(choice: ToolChoice): ChatCompletionToolChoiceOption {
  return typeof choice === 'string'
    ? choice
    : { type: 'function', function: { name: choice.name } };
}

/** The Chat Completions request body (non-streaming form; streaming adds `stream` fields). */
export function toOpenAIParams(
  model: ModelConfig,
  input: ParamsInput,
): ChatCompletionCreateParamsNonStreaming {
  const params: ChatCompletionCreateParamsNonStreaming = {
    model: model.model,
    messages: input.messages.map(toMessage),
  };
  params[model.maxTokensParam] = input.maxTokens;
  if (input.tools !== undefined && input.tools.length > 0) params.tools = input.tools.map(toTool);
  if (input.toolChoice !== undefined) params.tool_choice = toToolChoice(input.toolChoice);
  if (input.temperature !== undefined) params.temperature = input.temperature;
  if (input.topP !== undefined) params.top_p = input.topP;
  if (input.seed !== undefined) params.seed = input.seed;
  if (input.logprobs === true) params.logprobs = true;
  if (input.topLogprobs !== undefined) params.top_logprobs = input.topLogprobs;
  return params;
}
