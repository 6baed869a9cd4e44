// Identifiers: 24 lowercase hex chars, 4 bytes of Unix seconds + 8 random bytes, so ids sort by creation.
import { randomBytes } from 'node:crypto';

/** Returns a new id for `now`; ids made in a later second sort after earlier ones. */
export function newId(now: Date = new Date()): string {
  const seconds = Math.floor(now.getTime() / 1000) >>> 0;
  return seconds.toString(16).padStart(8, '0') + randomBytes(8).toString('hex');
}

/** True when `value` has the shape of an id (it may still not exist). */
export function isId(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{24}$/.test(value);
}
