import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
const compiled = new WeakMap<object, ValidateFunction>();

/**
 * Validates a model's arguments against an MCP tool's `inputSchema` (JSON Schema); returns every
 * problem as `arguments.<field>: <rule>` joined by `; `, or undefined when they are valid. A
 * schema ajv cannot compile validates nothing (the server still checks).
 */
export function mcpArgumentsProblem(schema: object, args: unknown): string | undefined {
  let validate = compiled.get(schema);
  if (!validate) {
    try {
      validate = ajv.compile(schema);
    } catch {
      return undefined;
    }
    compiled.set(schema, validate);
  }
  if (validate(args)) return undefined;
  return (validate.errors ?? []).map(describe).join('; ');
}

function describe(e: ErrorObject): string {
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required') path.push(String(params['missingProperty']));
  if (e.keyword === 'additionalProperties') path.push(String(params['additionalProperty']));
  const field = ['arguments', ...path].join('.');
  const rule =
    e.keyword === 'required'
      ? 'required'
      : e.keyword === 'additionalProperties'
        ? 'not an argument of this tool'
        : (e.message ?? e.keyword);
  return `\`${field}\`: ${rule}`;
}
