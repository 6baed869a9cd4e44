// The clock: every time-dependent decision takes a Clock so tests can inject time.
export type Clock = { now(): Date };

/** The wall clock. */
export const systemClock: Clock = { now: () => new Date() };

/** A clock tests can set and advance; it never moves on its own. */
export function manualClock(
  start: Date | string = '2026-01-01T00:00:00.000Z',
): Clock & { set(t: Date | string): void; advance(ms: number): void } {
  let current = new Date(start);
  return {
    now: () => new Date(current),
    set: (t) => {
      current = new Date(t);
    },
    advance: (ms) => {
      current = new Date(current.getTime() + ms);
    },
  };
}
