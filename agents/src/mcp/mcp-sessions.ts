import type { Logger } from '@troupe/actors';
import type { ToolDefinition } from '@troupe/llm';
import { toTroupeError } from '@troupe/proto';
import type { SandboxPort } from '../agent/sandbox-port';
import { type ToolOutcome, toolError } from '../agent/tools/tool-outcome';
import { mcpArgumentsProblem } from './mcp-args';
import { type McpConfig, mcpServerOf, mcpToolName } from './mcp-config';
import { McpConnection } from './mcp-connection';

/** What a session's MCP tools need at the moment they are used. */
export interface McpUse {
  /** The template's `mcp` field. */
  config: McpConfig;
  /** The session's `main` sandbox (stdio servers), created first if the template declares it. */
  sandbox: () => Promise<SandboxPort>;
  /** The turn's signal. */
  signal: AbortSignal;
  /** Told when a server goes down or is connected (trajectory). */
  onEvent?: (event: { server: string; state: 'connected' | 'down'; detail: string }) => void;
}

/** One session's MCP servers: connections by server name, opened on first use. */
class SessionServers {
  readonly connections = new Map<string, McpConnection>();
  constructor(
    /** The config the connections were opened with (a template change reopens them). */
    readonly key: string,
    /** The latest use: connections outlive a turn, so they reach its sandbox and events here. */
    public use: McpUse,
  ) {}
}

/**
 * The MCP connections of every session active on this host. Connections are per session: opened
 * lazily (the first model step lists the tools), cached, and closed when the session is
 * passivated ({@link closeSession}) or the template's `mcp` changes.
 */
export class McpSessions {
  private readonly sessions = new Map<string, SessionServers>();

  constructor(private readonly log: Logger) {}

  private servers(sessionId: string, use: McpUse): SessionServers {
    let s = this.sessions.get(sessionId);
    const key = JSON.stringify(use.config);
    if (s && s.key !== key) {
      for (const c of s.connections.values()) void c.close();
      s = undefined;
    }
    if (!s) {
      const created = new SessionServers(key, use);
      s = created;
      for (const server of use.config.servers) {
        s.connections.set(
          server.name,
          new McpConnection(server, {
            config: use.config,
            sandbox: () => created.use.sandbox(),
            log: this.log.child({ session: sessionId, mcpServer: server.name }),
            onEvent: (state, detail) =>
              created.use.onEvent?.({ server: server.name, state, detail }),
          }),
        );
      }
      this.sessions.set(sessionId, s);
    }
    s.use = use;
    return s;
  }

  /**
   * The model-facing definitions of the session's MCP tools (`mcp__<server>__<tool>`, the
   * server's input schema as parameters). A server not yet connected is connected now; one that
   * cannot be reached is left out (and reported through `onEvent`), the rest still offered.
   */
  async definitions(sessionId: string, use: McpUse): Promise<ToolDefinition[]> {
    const servers = this.servers(sessionId, use);
    const out: ToolDefinition[] = [];
    for (const conn of servers.connections.values()) {
      let tools = conn.listedTools;
      if (!tools) {
        try {
          tools = await conn.ensure(use.signal);
        } catch (err) {
          if (use.signal.aborted) throw err;
          continue; // reported as down by the connection
        }
      }
      for (const t of tools) {
        out.push({
          name: mcpToolName(conn.server.name, t.name),
          description: `[MCP ${conn.server.name}] ${t.description ?? t.title ?? t.name}`.slice(
            0,
            1_024,
          ),
          parameters: { ...t.inputSchema },
        });
      }
    }
    return out;
  }

  /**
   * Runs the model's call of MCP tool `name`: arguments validated against the tool's input
   * schema (an error naming the field), then called under the per-call timeout. A server error,
   * crash or hang is an `error:` result; only the turn's own abort is thrown.
   */
  async call(sessionId: string, name: string, args: unknown, use: McpUse): Promise<ToolOutcome> {
    const serverName = mcpServerOf(name) as string;
    const conn = this.servers(sessionId, use).connections.get(serverName);
    if (!conn) return toolError(`no MCP server '${serverName}' in this session's template`);
    try {
      const tools = conn.listedTools ?? (await conn.ensure(use.signal));
      const tool = tools.find((t) => mcpToolName(serverName, t.name) === name);
      if (!tool) {
        const names = tools.map((t) => mcpToolName(serverName, t.name));
        return toolError(
          `unknown tool '${name}'; server ${serverName} offers: ${names.join(', ')}`,
        );
      }
      if (typeof args !== 'object' || args === null || Array.isArray(args)) {
        return toolError(`the arguments of ${name} must be a JSON object`);
      }
      const problem = mcpArgumentsProblem(tool.inputSchema, args);
      if (problem) return toolError(`INVALID_ARGUMENT: ${problem}`);
      const r = await conn.call(tool.name, args as Record<string, unknown>, use.signal);
      return r.isError ? toolError(r.text) : { ok: true, content: r.text };
    } catch (err) {
      if (use.signal.aborted) throw err;
      const e = toTroupeError(err);
      return toolError(`${e.code}: ${e.message}`);
    }
  }

  /** Closes the session's connections (its stdio servers are killed). */
  async closeSession(sessionId: string): Promise<void> {
    const s = this.sessions.get(sessionId);
    if (!s) return;
    this.sessions.delete(sessionId);
    await Promise.all([...s.connections.values()].map((c) => c.close()));
  }

  /** Closes every session's connections. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((id) => this.closeSession(id)));
  }
}

/** A running session's MCP tools as its turn and tools see them ({@link sessionMcp}). */
export interface SessionMcp {
  /** Definitions of its MCP tools for the next model call. */
  definitions(): Promise<ToolDefinition[]>;
  /** Runs one call ({@link McpSessions.call}). */
  call(name: string, args: unknown): Promise<ToolOutcome>;
}

/**
 * Binds {@link McpSessions} to one session for one turn: its template's `mcp`, its sandbox and
 * signal; undefined when the host has no MCP or the template names no server.
 */
export function sessionMcp(
  sessions: McpSessions | undefined,
  sessionId: string,
  use: Omit<McpUse, 'config'> & { config: McpConfig | undefined },
): SessionMcp | undefined {
  const { config } = use;
  if (!sessions || !config) return undefined;
  const bound: McpUse = { ...use, config };
  return {
    definitions: () => sessions.definitions(sessionId, bound),
    call: (name, args) => sessions.call(sessionId, name, args, bound),
  };
}
