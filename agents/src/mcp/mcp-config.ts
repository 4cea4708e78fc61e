import { z } from 'zod';

/** An MCP server's name in a template: `[a-z][a-z0-9-]{0,23}` (no `_`: tool names split on `__`). */
export const MCP_SERVER_NAME = /^[a-z][a-z0-9-]{0,23}$/;

/** An MCP server's name ({@link MCP_SERVER_NAME}). */
export const McpServerNameSchema = z
  .string()
  .regex(MCP_SERVER_NAME, 'must match [a-z][a-z0-9-]{0,23}');

const envKey = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must match [A-Za-z_][A-Za-z0-9_]{0,127}');

/** A stdio server: a command run inside the session's sandbox, speaking MCP on stdin/stdout. */
export const McpStdioSchema = z.strictObject({
  /** The program (argv[0]), looked up on the sandbox's PATH. */
  command: z.string().min(1, 'must not be empty').max(4_096),
  /** Its arguments. @default [] */
  args: z.array(z.string().max(65_536)).max(256).default([]),
  /** Extra environment (the sandbox's secret-key rules apply). @default {} */
  env: z.record(envKey, z.string().max(65_536)).default({}),
  /** Working directory inside the sandbox. @default the workspace */
  cwd: z.string().regex(/^\//, 'must be an absolute path').optional(),
});

/** One MCP server a template names: `stdio` (in the sandbox) or `url` (streamable HTTP). */
export const McpServerSchema = z
  .strictObject({
    /** Name; its tools reach the model as `mcp__<name>__<tool>`. */
    name: McpServerNameSchema,
    /** Run inside the session's sandbox (least privilege: never on the agent host). */
    stdio: McpStdioSchema.optional(),
    /** A streamable-HTTP endpoint, reached from the agent host. */
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    /** HTTP headers sent with every request (`url` only). */
    headers: z.record(z.string().min(1).max(256), z.string().max(8_192)).optional(),
    /** Only these of the server's tools are offered. @default every tool it lists */
    tools: z.array(z.string().min(1).max(128)).max(256).optional(),
  })
  .superRefine((s, ctx) => {
    if ((s.stdio === undefined) === (s.url === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['stdio'],
        message: 'give exactly one of stdio and url',
      });
    }
    if (s.headers !== undefined && s.url === undefined) {
      ctx.addIssue({ code: 'custom', path: ['headers'], message: 'only with url' });
    }
  });
/** A validated MCP server entry. */
export type McpServerConfig = z.output<typeof McpServerSchema>;

/** The `mcp` field of a template: the servers and how their calls are bounded. */
export const McpConfigSchema = z.strictObject({
  /** The servers; names are unique. */
  servers: z
    .array(McpServerSchema)
    .min(1, 'must name at least one server')
    .max(16)
    .refine((s) => new Set(s.map((x) => x.name)).size === s.length, 'must not repeat a name'),
  /** Longest one tool call may take; then it is an error and the server is marked down. @default 60000 */
  callTimeoutMs: z.int().min(100).max(3_600_000).default(60_000),
  /** Longest connecting (start, initialize, list tools) may take. @default 30000 */
  connectTimeoutMs: z.int().min(100).max(600_000).default(30_000),
});
/** The `mcp` field as a caller writes it. */
export type McpConfigInput = z.input<typeof McpConfigSchema>;
/** A validated, defaulted `mcp` field. */
export type McpConfig = z.output<typeof McpConfigSchema>;

/** Prefix of every MCP tool name the model sees. */
export const MCP_TOOL_PREFIX = 'mcp__';

/**
 * The model-facing name of tool `tool` of server `server`: `mcp__<server>__<tool>`, with
 * characters OpenAI refuses in a name replaced by `_`, cut to 64.
 */
export function mcpToolName(server: string, tool: string): string {
  return `${MCP_TOOL_PREFIX}${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}

/** The server named in an MCP tool name, or undefined when `name` is not one. */
export function mcpServerOf(name: string): string | undefined {
  if (!name.startsWith(MCP_TOOL_PREFIX)) return undefined;
  const rest = name.slice(MCP_TOOL_PREFIX.length);
  const end = rest.indexOf('__');
  return end > 0 ? rest.slice(0, end) : undefined;
}
