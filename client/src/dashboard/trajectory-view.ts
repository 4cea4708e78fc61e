/** One step of a trajectory as the task page shows it. */
export interface TrajectoryStep {
  seq: number;
  type: string;
  atMs: number | null;
  sessionId: string;
  /** Messages the step added to the context: role, text (cut), tool calls. */
  messages: { role: string; text: string; toolCalls: { name: string; args: string }[] }[];
  /** Tool name of a tool call / result. */
  tool: string | null;
  costUsd: number | null;
  tokens: number | null;
  /** Subagent session this step created or called, when it did. */
  subagent: string | null;
  /** `costUsd` is the task's cost spread evenly over its model calls (the file had none). */
  costEstimated?: boolean;
}

/** A trajectory, with the sessions it touched (the root first, then subagents). */
export interface TrajectoryView {
  steps: TrajectoryStep[];
  sessions: string[];
  /**
   * The subagent tree: each session's parent, the session whose step first created or called
   * it (`null` for the root and for a session no step names).
   */
  parents: Record<string, string | null>;
  totalCostUsd: number;
  /** Steps not shown because the trajectory was longer than the page's cap. */
  cut: number;
}

const MAX_TEXT = 4_000;
const MAX_STEPS = 2_000;

function cut(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}… (${text.length} chars)` : text;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => {
        const o = p as Record<string, unknown>;
        return typeof o['text'] === 'string' ? o['text'] : `[${str(o['type'], 'part')}]`;
      })
      .join('\n');
  }
  return content === null || content === undefined ? '' : JSON.stringify(content);
}

/** Tool calls of a stored message (`toolCalls`) or an OpenAI one (`tool_calls`). */
function toolCallsOf(m: Record<string, unknown>): { name: string; args: string }[] {
  const calls = m['toolCalls'] ?? m['tool_calls'];
  if (!Array.isArray(calls)) return [];
  return (calls as Record<string, unknown>[]).map((c) => {
    const f = (c['function'] ?? c) as Record<string, unknown>;
    return {
      name: str(f['name']),
      args: cut(str(f['argumentsText'] ?? f['arguments'])),
    };
  });
}

/** A string field, or `fallback` when it is not a string. */
function str(v: unknown, fallback = ''): string {
  return typeof v === 'string' ? v : fallback;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * Reads a `trajectory.jsonl` artifact (the agent's trajectory events, one JSON object a line, as
 * the agents store them) into steps for the task page. Unknown lines are kept as raw steps rather
 * than dropped, so a format change shows up instead of hiding.
 */
export function trajectoryView(jsonl: string, taskCostUsd = 0): TrajectoryView {
  const steps: TrajectoryStep[] = [];
  const sessions: string[] = [];
  let total = 0;
  let lines = 0;
  for (const line of jsonl.split('\n')) {
    if (!line.trim()) continue;
    lines++;
    if (steps.length >= MAX_STEPS) continue;
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(line) as Record<string, unknown>;
    } catch {
      steps.push({
        seq: lines,
        type: 'unparsed',
        atMs: null,
        sessionId: '',
        messages: [{ role: 'raw', text: cut(line), toolCalls: [] }],
        tool: null,
        costUsd: null,
        tokens: null,
        subagent: null,
      });
      continue;
    }
    if (Array.isArray(e['messages']) && e['type'] === undefined) {
      // A session's conversation as one record (`trajectoryToRecord`, the agents' export).
      const meta = (e['metadata'] ?? {}) as Record<string, unknown>;
      const sid = typeof meta['sessionId'] === 'string' ? meta['sessionId'] : `session-${lines}`;
      if (!sessions.includes(sid)) sessions.push(sid);
      steps.push(...recordSteps(sid, e['messages'] as Record<string, unknown>[]));
      continue;
    }
    const data = (e['data'] ?? {}) as Record<string, unknown>;
    const sessionId = typeof e['sessionId'] === 'string' ? e['sessionId'] : '';
    if (sessionId && !sessions.includes(sessionId)) sessions.push(sessionId);
    const usage = (data['usage'] ?? {}) as Record<string, unknown>;
    const costUsd = num(data['costUsd']);
    if (costUsd !== null) total += costUsd;
    const messages = Array.isArray(e['messages'])
      ? (e['messages'] as Record<string, unknown>[]).map((m) => ({
          role: str(m['role']),
          text: cut(textOf(m['content'])),
          toolCalls: toolCallsOf(m),
        }))
      : [];
    const tool =
      typeof data['tool'] === 'string'
        ? data['tool']
        : typeof data['name'] === 'string'
          ? data['name']
          : null;
    const sub = data['subagentSessionId'] ?? data['childSessionId'] ?? data['sessionId'];
    steps.push({
      seq: num(e['seq']) ?? lines,
      type: str(e['type'], 'unknown'),
      atMs: num(e['atMs']),
      sessionId,
      messages,
      tool,
      costUsd,
      tokens: num(usage['totalTokens']) ?? num(usage['total_tokens']),
      subagent: typeof sub === 'string' && sub !== sessionId ? sub : null,
    });
  }
  const calls = steps.filter((x) => x.type === 'model_call');
  if (total === 0 && taskCostUsd > 0 && calls.length > 0) {
    for (const c of calls) {
      c.costUsd = taskCostUsd / calls.length;
      c.costEstimated = true;
    }
    total = taskCostUsd;
  }
  return {
    steps: steps.slice(0, MAX_STEPS),
    sessions,
    parents: sessionParents(sessions, steps),
    totalCostUsd: total,
    cut: Math.max(0, steps.length - MAX_STEPS),
  };
}

/**
 * Each session's parent: the session of the first step that names it as a subagent. A subagent
 * named only by a step (its own steps not in the file) is added to `sessions`. The root (the
 * first session) has none, and a step cannot make a session its own ancestor.
 */
function sessionParents(
  sessions: string[],
  steps: readonly TrajectoryStep[],
): Record<string, string | null> {
  const parents: Record<string, string | null> = Object.create(null) as Record<
    string,
    string | null
  >;
  for (const s of sessions) parents[s] = null;
  const isAncestor = (candidate: string, of: string): boolean => {
    for (let at: string | null = of, hops = 0; at !== null && hops <= sessions.length; hops++) {
      if (at === candidate) return true;
      at = parents[at] ?? null;
    }
    return false;
  };
  for (const step of steps) {
    const child = step.subagent;
    if (!child || !step.sessionId || child === sessions[0]) continue;
    if (!(child in parents)) {
      sessions.push(child);
      parents[child] = null;
    }
    if (parents[child] === null && !isAncestor(child, step.sessionId)) {
      parents[child] = step.sessionId;
    }
  }
  return parents;
}

/** Steps of one conversation record: each message, and each tool call of an assistant turn. */
function recordSteps(sessionId: string, messages: Record<string, unknown>[]): TrajectoryStep[] {
  const out: TrajectoryStep[] = [];
  const toolNames = new Map<string, string>();
  const base = { atMs: null, sessionId, costUsd: null, tokens: null, subagent: null };
  messages.forEach((m, i) => {
    const role = str(m['role']);
    const calls = toolCallsOf(m);
    const text = cut(textOf(m['content']));
    if (role === 'assistant') {
      out.push({
        ...base,
        seq: i + 1,
        type: 'model_call',
        messages: [{ role, text, toolCalls: calls }],
        tool: null,
      });
      const raw = (m['tool_calls'] ?? []) as Record<string, unknown>[];
      calls.forEach((c, k) => {
        const id = raw[k]?.['id'];
        if (typeof id === 'string') toolNames.set(id, c.name);
        out.push({
          ...base,
          seq: i + 1,
          type: 'tool_call',
          messages: [],
          tool: c.name,
          subagent: subagentOf(c),
        });
      });
    } else if (role === 'tool') {
      const id = m['tool_call_id'];
      out.push({
        ...base,
        seq: i + 1,
        type: 'tool_result',
        messages: [{ role, text, toolCalls: [] }],
        tool: typeof id === 'string' ? (toolNames.get(id) ?? null) : null,
      });
    } else {
      out.push({
        ...base,
        seq: i + 1,
        type: 'message',
        messages: [{ role, text, toolCalls: [] }],
        tool: null,
      });
    }
  });
  return out;
}

/** The session a `call_subagent`/`create_subagent` call names, when its arguments say. */
function subagentOf(call: { name: string; args: string }): string | null {
  if (!call.name.includes('subagent')) return null;
  try {
    const a = JSON.parse(call.args) as Record<string, unknown>;
    const v = a['sessionId'] ?? a['name'] ?? a['subagent'];
    return typeof v === 'string' ? v : null;
  } catch {
    return null;
  }
}
