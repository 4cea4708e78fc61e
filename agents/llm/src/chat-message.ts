/** A tool call made by the model. Arguments stay raw text: the agent validates them. */
export interface ToolCall {
  /** Provider-assigned id (synthesised as `call_<requestId>_<index>` when a server omits it). */
  id: string;
  /** Function name. */
  name: string;
  /** Arguments exactly as the model produced them; may be invalid JSON. */
  argumentsText: string;
}

/** Instructions for the model. */
export interface SystemMessage {
  /** Discriminant. */
  role: 'system';
  /** The text. */
  content: string;
}

/** Text in a multi-part user turn. */
export interface TextPart {
  /** Discriminant. */
  type: 'text';
  /** The text. */
  text: string;
}

/** An image in a multi-part user turn (a screenshot), for models that take images. */
export interface ImagePart {
  /** Discriminant. */
  type: 'image';
  /** `data:image/png;base64,…` (or an `https:` URL the provider can fetch). */
  url: string;
  /** Resolution the provider should use. @default provider default */
  detail?: 'low' | 'high' | 'auto';
}

/** One part of a multi-part user turn. */
export type UserContentPart = TextPart | ImagePart;

/** A user (or environment) turn. */
export interface UserMessage {
  /** Discriminant. */
  role: 'user';
  /** The text, or text and images in order. */
  content: string | readonly UserContentPart[];
}

/** A model turn: text, tool calls, or both. */
export interface AssistantMessage {
  /** Discriminant. */
  role: 'assistant';
  /** The text; null when the turn only calls tools. */
  content: string | null;
  /** Tool calls the turn made. @default none */
  toolCalls?: readonly ToolCall[];
}

/** The result of one tool call, answering the call with the same id. */
export interface ToolMessage {
  /** Discriminant. */
  role: 'tool';
  /** The {@link ToolCall.id} this answers. */
  toolCallId: string;
  /** The result (or error) text shown to the model. */
  content: string;
}

/** One message of a conversation sent to a model. */
export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** The assistant message of a completion: tool calls always present (possibly empty). */
export interface AssistantReply extends AssistantMessage {
  /** Tool calls, in the order the model made them. */
  toolCalls: ToolCall[];
}

/** A function the model may call. */
export interface ToolDefinition {
  /** Function name (`[A-Za-z0-9_-]{1,64}` for OpenAI). */
  name: string;
  /** What the tool does, for the model. @default none */
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
  /** Ask the provider to enforce the schema (OpenAI structured outputs). @default not sent */
  strict?: boolean;
}

/** Whether and which tool the model must call: `{name}` forces that function. */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };
