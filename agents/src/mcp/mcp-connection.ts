import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode as McpErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@troupe/actors';
import { ErrorCode, TroupeError } from '@troupe/proto';
import type { SandboxPort } from '../agent/sandbox-port';
import type { McpConfig, McpServerConfig } from './mcp-config';
import { SandboxStdioTransport } from './sandbox-stdio-transport';

/** Connections a server may get per session: the first, and one reconnect after it went down. */
const MAX_CONNECTS = 2;

/** What a connection needs besides its server's entry. */
export interface McpConnectionOptions {
  /** The template's `mcp` field (timeouts). */
  config: McpConfig;
  /** The session's `main` sandbox, created first if the template declares it (stdio servers). */
  sandbox: () => Promise<SandboxPort>;
  log: Logger;
  /** Told when the server is connected (its tools) or goes down (why), for the trajectory. */
  onEvent?: (state: 'connected' | 'down', detail: string) => void;
}

/** What one tool call of an MCP server returned. */
export interface McpCallResult {
  /** The server's `isError`. */
  isError: boolean;
  /** The result's content as text. */
  text: string;
}

/**
 * One session's connection to one MCP server: opened on first use (start in the sandbox or
 * reach the URL, `initialize`, `tools/list`, cached), closed with the session. A server that
 * exits, breaks its stream or lets a call pass its deadline is marked down (a hung one is
 * killed); the next use reconnects once, after which it stays down for the session.
 */
export class McpConnection {
  private client: Client | undefined;
  private transport: Transport | undefined;
  private connecting: Promise<Tool[]> | undefined;
  private tools: Tool[] | undefined;
  private connects = 0;
  /** Why the server is down, while it is. */
  private downWhy: string | undefined;

  constructor(
    readonly server: McpServerConfig,
    private readonly o: McpConnectionOptions,
  ) {}

  /** The tools last listed (also while down: the model keeps seeing them), or undefined. */
  get listedTools(): readonly Tool[] | undefined {
    return this.tools;
  }

  /**
   * The server's tools (its `tools` allowlist applied), connecting first when it has no live
   * connection.
   * @throws TroupeError `UNAVAILABLE` when it cannot be reached or stays down
   */
  async ensure(signal: AbortSignal): Promise<Tool[]> {
    if (this.client && !this.downWhy && this.tools) return this.tools;
    this.connecting ??= this.connect(signal).finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(signal: AbortSignal): Promise<Tool[]> {
    const { server } = this;
    if (this.connects >= MAX_CONNECTS) {
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `MCP server ${server.name} is down (${this.downWhy ?? 'unknown'}); it was reconnected once already`,
        { retryable: false },
      );
    }
    this.connects++;
    const client = new Client({ name: 'troupe-agent', version: '0.1.0' });
    const transport = await this.transportFor(server);
    client.onclose = () => {
      if (this.client === client) this.markDown(this.exitOf(transport) ?? 'connection closed');
    };
    client.onerror = (err) => this.o.log.warn({ err, server: server.name }, 'MCP transport error');
    const timeout = this.o.config.connectTimeoutMs;
    try {
      await client.connect(transport, { timeout, signal });
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {}, { timeout, signal });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      const allowed = server.tools ? new Set(server.tools) : undefined;
      this.tools = allowed ? tools.filter((t) => allowed.has(t.name)) : tools;
      this.client = client;
      this.transport = transport;
      this.downWhy = undefined;
      this.o.log.info({ server: server.name, tools: this.tools.length }, 'MCP server connected');
      this.o.onEvent?.('connected', this.tools.map((t) => t.name).join(', '));
      return this.tools;
    } catch (err) {
      await client.close().catch(() => undefined);
      const why = `${this.exitOf(transport) ?? (err as Error).message}`;
      this.markDown(`connect failed: ${why}`);
      if (signal.aborted) throw err;
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `MCP server ${server.name}: connect failed: ${why}`,
        { cause: err },
      );
    }
  }

  private async transportFor(server: McpServerConfig): Promise<Transport> {
    if (server.url !== undefined) {
      return new StreamableHTTPClientTransport(new URL(server.url), {
        ...(server.headers ? { requestInit: { headers: server.headers } } : {}),
      });
    }
    const stdio = server.stdio as NonNullable<McpServerConfig['stdio']>;
    return new SandboxStdioTransport({
      port: await this.o.sandbox(),
      argv: [stdio.command, ...stdio.args],
      env: stdio.env,
      ...(stdio.cwd !== undefined ? { cwd: stdio.cwd } : {}),
    });
  }

  private exitOf(transport: Transport): string | undefined {
    return transport instanceof SandboxStdioTransport ? transport.exit : undefined;
  }

  private markDown(why: string): void {
    if (this.downWhy !== undefined) return;
    this.downWhy = why;
    this.o.log.warn({ server: this.server.name, why }, 'MCP server down');
    this.o.onEvent?.('down', why);
    const client = this.client;
    this.client = undefined;
    this.transport = undefined;
    // Kills a hung stdio server; a no-op for one that exited.
    void client?.close().catch(() => undefined);
  }

  /**
   * Calls `tool` with validated arguments under the per-call timeout. The server's own tool
   * errors (`isError`) come back as a result; a crash, a broken stream or the deadline marks the
   * server down and throws `UNAVAILABLE` / `TIMEOUT` naming it.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<McpCallResult> {
    await this.ensure(signal);
    const client = this.client as Client;
    const transport = this.transport as Transport;
    const timeoutMs = this.o.config.callTimeoutMs;
    let result;
    try {
      result = await client.callTool({ name: tool, arguments: args }, undefined, {
        timeout: timeoutMs,
        signal,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      const name = this.server.name;
      if (err instanceof McpError && err.code === Number(McpErrorCode.RequestTimeout)) {
        this.markDown(`call of ${tool} passed ${timeoutMs} ms`);
        throw new TroupeError(
          ErrorCode.TIMEOUT,
          `MCP server ${name}: ${tool} did not answer within ${timeoutMs} ms; the server is marked down (a later call reconnects once)`,
          { cause: err },
        );
      }
      if (err instanceof McpError && err.code === Number(McpErrorCode.ConnectionClosed)) {
        const why = this.exitOf(transport) ?? 'connection closed';
        this.markDown(why);
        throw new TroupeError(
          ErrorCode.UNAVAILABLE,
          `MCP server ${name} ${why} during ${tool}; the server is marked down (a later call reconnects once)`,
          { cause: err },
        );
      }
      if (err instanceof McpError) {
        // A JSON-RPC error answer (unknown tool, bad params): the server is fine.
        throw new TroupeError(ErrorCode.INVALID_ARGUMENT, `MCP server ${name}: ${err.message}`, {
          cause: err,
        });
      }
      this.markDown((err as Error).message);
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `MCP server ${name}: ${(err as Error).message}; the server is marked down`,
        { cause: err },
      );
    }
    return { isError: result.isError === true, text: resultText(result) };
  }

  /** Closes the connection (kills a stdio server). */
  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.transport = undefined;
    await client?.close().catch(() => undefined);
  }
}

/** A tool result's content as text for the model. */
function resultText(result: Record<string, unknown>): string {
  const content = Array.isArray(result['content']) ? (result['content'] as unknown[]) : [];
  const parts = content.map((c) => {
    const item = c as { type?: string; text?: string; mimeType?: string; resource?: unknown };
    if (item.type === 'text' && typeof item.text === 'string') return item.text;
    if (item.type === 'resource') return JSON.stringify(item.resource);
    return `[${item.type ?? 'content'}${item.mimeType ? ` ${item.mimeType}` : ''}]`;
  });
  if (parts.length === 0 && result['structuredContent'] !== undefined) {
    return JSON.stringify(result['structuredContent']);
  }
  return parts.join('\n');
}
