import type { AgentSessionState, StoredMessage } from './agent-state';

/** How an elided message's text begins (such a message is never elided again). */
export const ELIDED_PREFIX = '[elided to keep the session state small:';

/**
 * Most bytes one UTF-16 code unit can take in the state's JSON (`\u001f` for a control
 * character): the bound used to estimate growth between exact measurements.
 */
export const MAX_JSON_BYTES_PER_CHAR = 6;

/** What {@link elideOlderMessages} did. */
export interface ElisionResult {
  /** Messages whose text was replaced. */
  elided: number;
  /** Characters removed (text length minus reference length, summed). */
  freedChars: number;
}

/**
 * Serialized size of a session state in bytes: what its one KV value holds, which the NATS
 * server's `max_payload` bounds.
 */
export function stateBytes(state: AgentSessionState): number {
  return Buffer.byteLength(JSON.stringify(state), 'utf8');
}

/**
 * Characters of text in the state that grow with the session: messages, pending inbound
 * messages, subagent definitions.
 */
export function growingChars(state: AgentSessionState): number {
  let n = 0;
  for (const a of Object.values(state.subagents)) n += a.instruction.length;
  for (const list of [state.messages, state.inbound ?? []]) {
    for (const m of list) {
      n += m.content?.length ?? 0;
      if (m.role === 'assistant') for (const c of m.toolCalls ?? []) n += c.argumentsText.length;
    }
  }
  return n;
}

/**
 * Replaces the text of older messages, in place, with a reference to the trajectory (which keeps
 * every message in full) until at least `charsToFree` characters are gone or nothing is left to
 * elide. Tool results go first, oldest first; then other messages, oldest first. Never touched:
 * system and pinned messages, the last assistant message and everything after it (the tool batch
 * in progress), and tool calls (the model's context keeps every call paired with its result).
 */
export function elideOlderMessages(
  messages: StoredMessage[],
  sessionId: string,
  charsToFree: number,
): ElisionResult {
  let lastAssistant = messages.length;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === 'assistant') {
      lastAssistant = i;
      break;
    }
  }
  const result: ElisionResult = { elided: 0, freedChars: 0 };
  for (const pass of ['tool', 'other'] as const) {
    for (let i = 0; i < lastAssistant && result.freedChars < charsToFree; i++) {
      const m = messages[i];
      if (!m || m.role === 'system' || m.pinned) continue;
      if ((m.role === 'tool') !== (pass === 'tool')) continue;
      const text = m.content ?? '';
      if (text.startsWith(ELIDED_PREFIX)) continue;
      const where =
        m.role === 'tool'
          ? `the tool_result event of call ${m.toolCallId}`
          : `the ${m.role} message's event`;
      const reference = `${ELIDED_PREFIX} ${text.length} characters of this ${m.role === 'tool' ? 'tool result' : 'message'}; the full text is in the trajectory of session ${sessionId} (${where})]`;
      if (reference.length >= text.length) continue;
      m.content = reference;
      result.elided++;
      result.freedChars += text.length - reference.length;
    }
  }
  return result;
}
