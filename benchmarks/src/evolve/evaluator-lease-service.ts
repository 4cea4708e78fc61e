import { type Logger } from '@troupe/actors';
import { type DriverActorRuntime } from '@troupe/coordinator';
import { errorCode } from '@troupe/proto';
import { z } from 'zod';
import { type SandboxEvaluatorPool } from './sandbox-evaluator-pool';

type NatsConnection = DriverActorRuntime['nc'];
type Subscription = ReturnType<NatsConnection['subscribe']>;

const id = z.string().min(1).max(128);

/**
 * A message on a search's lease subject (core NATS, JSON): `acquire` (a request: the reply grants
 * one sandbox when one is free, FIFO), `cancel` (drop a queued acquire, by `requestId`), `release`
 * (give a granted sandbox back, with what happened to it).
 */
export const EvaluatorLeaseMessageSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('acquire'), stepId: id, attemptId: id, requestId: id }).strict(),
  z.object({ op: z.literal('cancel'), stepId: id, requestId: id }).strict(),
  z
    .object({
      op: z.literal('release'),
      stepId: id,
      evaluator: id,
      lost: z.boolean().optional(),
      fatal: z.object({ code: z.string(), message: z.string() }).strict().optional(),
    })
    .strict(),
]);

/** A message on a lease subject (see {@link EvaluatorLeaseMessageSchema}). */
export type EvaluatorLeaseMessage = z.output<typeof EvaluatorLeaseMessageSchema>;

/** The reply to an `acquire`: the granted sandbox, or why none is. */
export const EvaluatorGrantSchema = z.union([
  z.object({ evaluator: id }).strict(),
  z.object({ error: z.object({ code: z.string(), message: z.string() }).strict() }).strict(),
]);

/** The reply to an `acquire` (see {@link EvaluatorGrantSchema}). */
export type EvaluatorGrant = z.output<typeof EvaluatorGrantSchema>;

/**
 * Serves a task's evaluator pool on `subject` (an `_INBOX` subject sent in each island step) for
 * the whole search, independently of the task actor's turn: islands acquire one sandbox per
 * evaluation ({@link SandboxEvaluatorPool.grant}) and give it back by publishing `release`.
 * Malformed messages are answered (when they carry a reply subject) with an `INVALID_ARGUMENT`
 * error naming the field, and otherwise ignored. Returns the subscription (unsubscribe at the end
 * of the search).
 */
export function serveEvaluatorLeases(
  nc: NatsConnection,
  subject: string,
  pool: SandboxEvaluatorPool,
  log: Logger,
): Subscription {
  const queued = new Map<string, AbortController>();
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return;
      const respond = (grant: EvaluatorGrant): void => {
        if (!msg.reply) return;
        try {
          msg.respond(JSON.stringify(grant));
        } catch (e) {
          log.warn({ err: e }, 'could not answer an evaluator lease request');
        }
      };
      let raw: unknown;
      try {
        raw = JSON.parse(msg.string());
      } catch {
        raw = undefined;
      }
      const parsed = EvaluatorLeaseMessageSchema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const field = issue?.path.join('.') || 'message';
        respond({
          error: {
            code: 'INVALID_ARGUMENT',
            message: `lease message: ${field}: ${issue?.message ?? 'invalid'}`,
          },
        });
        return;
      }
      const m = parsed.data;
      if (m.op === 'cancel') {
        queued.get(m.requestId)?.abort(new Error('cancelled by the island'));
        return;
      }
      if (m.op === 'release') {
        pool.giveBack(m.stepId, m.evaluator, {
          ...(m.lost ? { lost: true } : {}),
          ...(m.fatal ? { fatal: m.fatal } : {}),
        });
        return;
      }
      const ctl = new AbortController();
      queued.set(m.requestId, ctl);
      pool.grant(m.stepId, ctl.signal).then(
        (evaluator) => {
          queued.delete(m.requestId);
          if (ctl.signal.aborted || !msg.reply) {
            pool.giveBack(m.stepId, evaluator);
            return;
          }
          respond({ evaluator });
        },
        (e: unknown) => {
          queued.delete(m.requestId);
          if (ctl.signal.aborted) return;
          respond({ error: { code: errorCode(e), message: (e as Error).message } });
        },
      );
    },
  });
}
