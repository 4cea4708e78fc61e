import type { AgentTemplate } from '../agent-template';
import type { ModelNames } from '../tools/agent-tool';
import { doomLoop } from './doom-loop';
import { type AgentMiddleware, MiddlewareChain } from './middleware';
import { readBeforeEdit } from './read-before-edit';
import { summariseToolOutput } from './summarise-output';

/**
 * A middleware an agent host offers under a name: templates use it with
 * `{use: plugin, name, options}`; the factory validates `options` (throw to refuse them).
 */
export type MiddlewarePlugin = (options: Record<string, unknown>) => AgentMiddleware;

/** Plugins by name. */
export type MiddlewarePlugins = Readonly<Record<string, MiddlewarePlugin>>;

/**
 * Why a template's middleware and continuation policy cannot run on this host (a plugin it does
 * not offer, a model the registry lacks, options a plugin refuses), naming the field; undefined
 * when they can.
 */
export function middlewareProblem(
  template: AgentTemplate,
  models: ModelNames,
  plugins: MiddlewarePlugins,
): string | undefined {
  const model = (field: string, name: string | undefined) =>
    name === undefined || models.has(name)
      ? undefined
      : `\`${field}\`: '${name}' is not in the model registry (registered: ${models.names().join(', ')})`;
  const entries = template.middleware ?? [];
  for (const [i, m] of entries.entries()) {
    const field = `run.template.middleware[${i}]`;
    if (m.use === 'summarise_tool_output') {
      const bad = model(`${field}.model`, m.model);
      if (bad) return bad;
    }
    if (m.use === 'plugin') {
      const plugin = Object.hasOwn(plugins, m.name) ? plugins[m.name] : undefined;
      if (!plugin) {
        const offered = Object.keys(plugins);
        return `\`${field}.name\`: this agent host offers no plugin '${m.name}' (${offered.length ? `offered: ${offered.join(', ')}` : 'it offers none'})`;
      }
      try {
        plugin(m.options);
      } catch (err) {
        return `\`${field}.options\`: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
  }
  if (template.continuation?.kind === 'model') {
    return model('run.template.continuation.model', template.continuation.model);
  }
  return undefined;
}

/** The template's middleware chain (checked by {@link middlewareProblem} at run start). */
export function buildMiddlewareChain(
  template: AgentTemplate,
  plugins: MiddlewarePlugins,
): MiddlewareChain {
  return new MiddlewareChain(
    (template.middleware ?? []).map((m): AgentMiddleware => {
      switch (m.use) {
        case 'doom_loop':
          return doomLoop(m);
        case 'summarise_tool_output':
          return summariseToolOutput(m);
        case 'read_before_edit':
          return readBeforeEdit();
        case 'plugin': {
          const inner = plugins[m.name]!(m.options);
          return {
            name: `plugin:${m.name}`,
            ...(inner.beforeModel ? { beforeModel: inner.beforeModel.bind(inner) } : {}),
            ...(inner.afterModel ? { afterModel: inner.afterModel.bind(inner) } : {}),
            ...(inner.beforeTool ? { beforeTool: inner.beforeTool.bind(inner) } : {}),
            ...(inner.afterTool ? { afterTool: inner.afterTool.bind(inner) } : {}),
          };
        }
      }
    }),
  );
}
