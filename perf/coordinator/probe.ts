import { defineActor } from '@troupe/actors';
import { z } from 'zod';

let onHit: () => void = () => undefined;

/** Sets what a `hit` turn reports (the host process prints a timestamp). */
export function setProbeListener(fn: () => void): void {
  onHit = fn;
}

/** The actor kind perf/coordinator activates and wakes. */
export const Probe = defineActor({
  kind: 'probe',
  state: z.object({ n: z.number().int() }),
  initialState: () => ({ n: 0 }),
  messages: { hit: z.object({}), ping: z.object({}) },
  handlers: {
    hit: () => {
      onHit();
    },
    ping: () => ({ reply: 'pong' }),
  },
  idleTimeoutMs: 600_000,
});
