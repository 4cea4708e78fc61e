import { z } from 'zod';
import { AgentToolName } from '../agent/agent-tool-name';
import { defineTool, type ToolContext } from '../agent/tools/agent-tool';
import { type ToolOutcome, toolError } from '../agent/tools/tool-outcome';
import {
  MemoryKeySchema,
  MemoryLimits,
  type MemoryStore,
  type VersionedMemoryEntry,
} from './memory-store';

/** The default memory policy, stated in the system prompt of an agent with memory. */
export const DEFAULT_MEMORY_POLICY =
  'Search your memory before you start and when you are stuck. Write down what you learned that would help a later run: facts, fixes and pitfalls, not a diary. Keep one entry per topic and update it rather than adding near-duplicates.';

/** The memory section of a system prompt. */
export function memoryPrompt(memory: {
  scope: string;
  policy?: string | undefined;
  write: boolean;
}): string {
  const tools = memory.write
    ? 'memory_search, memory_read and memory_write'
    : 'memory_search and memory_read (read-only)';
  return `You have a long-term memory (scope ${memory.scope}) shared with other runs, through ${tools}. ${memory.policy ?? DEFAULT_MEMORY_POLICY}`;
}

/** A key made from a title: lower case, runs of other characters as `-`, at most 64. */
export function keyFromTitle(title: string): string {
  const slug = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
  return slug || 'note';
}

function describe(e: VersionedMemoryEntry): string {
  const p = e.provenance;
  return `${e.key} (version ${e.version}, by session ${p.session} run ${p.run} step ${p.step} at ${new Date(p.atMs).toISOString()})`;
}

type MemoryAccess =
  | { error: ToolOutcome }
  | { memory: NonNullable<ToolContext['session']['template']['memory']>; store: MemoryStore };

/** The session's memory scope and store, or the error the model gets. */
function memoryOf(ctx: ToolContext): MemoryAccess {
  const memory = ctx.session.template.memory;
  if (!memory) return { error: toolError('this agent has no memory') };
  if (!ctx.memory) return { error: toolError('UNAVAILABLE: this agent host has no memory store') };
  return { memory, store: ctx.memory };
}

/** `memory_write`: writes a new version of an entry of the agent's memory scope. */
export const memoryWrite = defineTool({
  name: AgentToolName.MEMORY_WRITE,
  description:
    'Write an entry to your long-term memory (a new version if the key exists). Other runs find it with memory_search.',
  schema: z.strictObject({
    title: z.string().min(1).max(MemoryLimits.TITLE_CHARS),
    text: z.string().min(1).max(MemoryLimits.TEXT_CHARS),
    key: MemoryKeySchema.optional().describe('the entry to update (default: made from the title)'),
    tags: z.array(z.string().min(1).max(64)).max(MemoryLimits.TAGS).default([]),
  }),
  effect: true,
  sandbox: false,
  async run(ctx, a) {
    const m = memoryOf(ctx);
    if ('error' in m) return m.error;
    if (!m.memory.write) return toolError('PERMISSION_DENIED: your memory is read-only');
    const run = ctx.session.run;
    const written = await m.store.write({
      scope: m.memory.scope,
      key: a.key ?? keyFromTitle(a.title),
      title: a.title,
      text: a.text,
      tags: a.tags,
      provenance: { session: ctx.sessionId, run: run.runId, step: run.steps, atMs: Date.now() },
    });
    return { ok: true, content: `wrote ${describe(written)}` };
  },
});

/** `memory_search`: the entries of the agent's memory scope that best match a query. */
export const memorySearch = defineTool({
  name: AgentToolName.MEMORY_SEARCH,
  description:
    'Search your long-term memory: the best-matching entries with their keys and a snippet.',
  schema: z.strictObject({
    query: z.string().min(1).max(1_000),
    limit: z.int().min(1).max(20).default(5),
  }),
  effect: false,
  sandbox: false,
  async run(ctx, a) {
    const m = memoryOf(ctx);
    if ('error' in m) return m.error;
    const hits = await m.store.search(m.memory.scope, a.query, a.limit);
    if (hits.length === 0) return { ok: true, content: 'no entry matches' };
    return {
      ok: true,
      content: hits
        .map(
          (h) =>
            `- ${h.entry.title} — ${describe(h.entry)}\n  ${h.entry.text.slice(0, 300).replace(/\s+/g, ' ')}`,
        )
        .join('\n'),
    };
  },
});

/** `memory_read`: one entry of the agent's memory scope, its latest version or a given one. */
export const memoryRead = defineTool({
  name: AgentToolName.MEMORY_READ,
  description: 'Read an entry of your long-term memory in full (its latest version, or `version`).',
  schema: z.strictObject({ key: MemoryKeySchema, version: z.int().min(1).optional() }),
  effect: false,
  sandbox: false,
  async run(ctx, a) {
    const m = memoryOf(ctx);
    if ('error' in m) return m.error;
    const e = await m.store.read(m.memory.scope, a.key, a.version);
    if (!e) {
      return toolError(
        `NOT_FOUND: \`arguments.key\`: no entry '${a.key}'${a.version !== undefined ? ` at version ${a.version}` : ''} in memory ${m.memory.scope}`,
      );
    }
    return {
      ok: true,
      content: `# ${e.title}\n${describe(e)}${e.tags.length ? `\ntags: ${e.tags.join(', ')}` : ''}\n\n${e.text}`,
    };
  },
});
