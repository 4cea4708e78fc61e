import { randomBytes } from 'node:crypto';

/** A random id `<prefix>-<24 hex>`: sandbox ids, task ids, pool ids. */
export function randomId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString('hex')}`;
}
