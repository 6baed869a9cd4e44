// Identifiers: 24 lowercase hex chars that sort by creation, laid out as MongoDB's ObjectId is: 4 bytes of Unix
// seconds, 5 random bytes chosen once per process, a 3-byte counter.
import { randomBytes } from 'node:crypto';

/** Makes ids for `now`; see createIdGenerator. */
export type IdGenerator = (now?: Date) => string;

const COUNTER_LIMIT = 0x1000000; // 3 bytes

/**
 * A generator whose ids are strictly increasing, as strings, in the order it makes them: within one second the counter
 * decides, and a clock that steps back (or a `now` earlier than the last one) keeps the last second instead, so "newest
 * first" lists and `?after=` cursors follow creation order exactly. The counter starts at a random value below 2^23, so
 * it cannot wrap within one second below 8 million ids; if it would, the id moves on to the next second. Ids of two
 * generators (two processes) made in the same second are ordered by their random bytes. `counterLimit` (a power of two
 * up to 2^24, the counter's three bytes) is lower only in tests, which reach it without making millions of ids.
 */
export function createIdGenerator(
  random: (n: number) => Buffer = randomBytes,
  counterLimit = COUNTER_LIMIT,
): IdGenerator {
  const processPart = random(5).toString('hex');
  let counter = (random(3).readUIntBE(0, 3) >>> 1) & (counterLimit / 2 - 1);
  let lastSeconds = 0;
  return (now = new Date()) => {
    let seconds = Math.max(Math.floor(now.getTime() / 1000), lastSeconds);
    counter += 1;
    if (counter >= counterLimit) {
      counter = 0;
      seconds = Math.max(seconds, lastSeconds + 1);
    }
    lastSeconds = seconds;
    return hex(seconds >>> 0, 8) + processPart + hex(counter, 6);
  };
}

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, '0');
}

/** This process's generator: every id feedsub makes comes from it (the one piece of module state, by design). */
export const newId: IdGenerator = createIdGenerator();

/** True when `value` has the shape of an id (it may still not exist); ids of earlier versions keep this shape. */
export function isId(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{24}$/.test(value);
}
