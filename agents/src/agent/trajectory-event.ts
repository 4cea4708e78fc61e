import { z } from 'zod';
import { StoredMessageSchema } from './agent-state';

/** Kinds of trajectory events. */
export const TrajectoryEventType = {
  /** A run began: its task (and, on a first run, the system instruction) entered the context. */
  RUN_START: 'run_start',
  /** A model call returned; `message` is the assistant turn. */
  MODEL_CALL: 'model_call',
  /** The agent is about to execute a tool call. */
  TOOL_CALL: 'tool_call',
  /** A tool call's result (or error); `message` is the tool message the model sees. */
  TOOL_RESULT: 'tool_result',
  /** A message (from another agent, a subagent result, a continue prompt) entered the context. */
  MESSAGE: 'message',
  /**
   * A middleware acted: `data.middleware`, `data.hook`, `data.action` (`rewrite`, `hint`, `block`,
   * `stop`), `data.toolCallId` and `data.detail` where they apply.
   */
  MIDDLEWARE: 'middleware',
  /** Older history was replaced by a summary. */
  COMPACTION: 'compaction',
  /**
   * A `cancel` reached the session: `data.cancelRunId` (the run it names), `data.reason`,
   * `data.outcome` (`accepted`: the run ends with CANCELLED at its next safe point; `ignored`,
   * with `data.why`: it names another run, or that run already ended).
   */
  CANCEL: 'cancel',
  /**
   * An MCP server of the session changed state: `data.server`, `data.state` (`connected`, with
   * its tools in `data.detail`; `down`, with why), for the run in progress.
   */
  MCP_SERVER: 'mcp_server',
  /** The run stopped; `data.result` is its {@link AgentRunResult}. */
  RUN_END: 'run_end',
} as const;
/** One of {@link TrajectoryEventType}. */
export type TrajectoryEventType = (typeof TrajectoryEventType)[keyof typeof TrajectoryEventType];

/** One event of a session's trajectory. */
export const TrajectoryEventSchema = z.object({
  sessionId: z.string(),
  /**
   * Position in the session's committed sequence. Work redone after a crash re-emits the same
   * `seq` with a higher `epoch`; readers keep the latest epoch per seq.
   */
  seq: z.int().min(1),
  /** Activation epoch that emitted it. */
  epoch: z.int(),
  runId: z.string(),
  atMs: z.number(),
  type: z.enum(TrajectoryEventType),
  /** Messages this event appended to the context, in order. @default none */
  messages: z.array(StoredMessageSchema).optional(),
  /** Event-specific facts (usage, cost, tool name, full message text, summary, result…). */
  data: z.record(z.string(), z.unknown()).default({}),
});
/** One event of a session's trajectory. */
export type TrajectoryEvent = z.infer<typeof TrajectoryEventSchema>;
