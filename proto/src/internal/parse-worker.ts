import { parentPort } from 'node:worker_threads';
import { isTroupeError } from '../errors';
import { parseUntrustedText, type ParseUntrustedTextOptions } from '../untrusted-text';

/** A parse request from {@link ParseWorkerPool}. */
export interface ParseRequest {
  id: number;
  text: string;
  options: ParseUntrustedTextOptions;
}

/** The answer to a {@link ParseRequest}: the value, or the error's wire shape. */
export type ParseReply =
  | { id: number; ok: true; value: unknown }
  | {
      id: number;
      ok: false;
      error: { code: string; message: string; details?: Record<string, unknown> };
    };

// The entry point of a parse worker thread: parses documents with the same bounded parser the
// main thread uses, and sends back the value or the error as data (errors do not survive the
// structured clone with their class, code and details).
parentPort?.on('message', (req: ParseRequest) => {
  let reply: ParseReply;
  try {
    reply = { id: req.id, ok: true, value: parseUntrustedText(req.text, req.options) };
  } catch (err) {
    reply = { id: req.id, ok: false, error: errorJson(err) };
  }
  try {
    parentPort?.postMessage(reply);
  } catch (err) {
    // A value the structured clone refuses (none is known: parsed YAML is plain data).
    parentPort?.postMessage({ id: req.id, ok: false, error: errorJson(err) } satisfies ParseReply);
  }
});

function errorJson(err: unknown): {
  code: string;
  message: string;
  details?: Record<string, unknown>;
} {
  if (isTroupeError(err)) {
    const json = err.toJSON();
    return {
      code: json.code,
      message: json.message,
      ...(json.details ? { details: json.details } : {}),
    };
  }
  return { code: 'INTERNAL', message: `parse worker: ${(err as Error)?.message ?? String(err)}` };
}
