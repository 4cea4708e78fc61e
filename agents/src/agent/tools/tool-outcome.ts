/** A tool's outcome as text for the model; `finish` ends the run with it as final text. */
export interface ToolOutcome {
  /** The tool result the model sees (cut to head and tail when long). */
  content: string;
  /** False for an error result. */
  ok: boolean;
  /** `finish_task`'s summary: the run ends with it as final text. */
  finish?: string;
}

/** An error result: `error: <message>`. */
export function toolError(message: string): ToolOutcome {
  return { ok: false, content: `error: ${message}` };
}
