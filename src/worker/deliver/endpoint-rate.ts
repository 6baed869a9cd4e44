// Endpoints' rate limits, in memory: when each rate-limited endpoint started its attempts within the last second, so
// that at most `rate_limit` attempts start in any one second, and when a full endpoint may start again.

const WINDOW_MS = 1000;

/** The attempts of rate-limited endpoints started within the last second. Only endpoints with a limit are noted, and an
 *  endpoint's times leave once a second old, so this holds at most one second's attempts, each limit's worth at most. */
export class EndpointRates {
  /** Endpoint id → its limit as last noted and its start times (ms), oldest first, within the second before the last
   *  look. */
  readonly #windows = new Map<string, { limit: number; starts: number[] }>();
  #prunedAt = 0;

  /** How many more attempts the endpoint may start at `nowMs` under `limit` (its current one): Infinity without. */
  room(endpointId: string, limit: number | null, nowMs: number): number {
    if (limit === null) return Infinity;
    return Math.max(0, limit - this.#recent(endpointId, nowMs).length);
  }

  /** Notes an attempt started at `nowMs` (nothing for an endpoint without a limit). */
  started(endpointId: string, limit: number | null, nowMs: number): void {
    if (limit === null) return;
    const starts = this.#recent(endpointId, nowMs);
    starts.push(nowMs);
    // Only the last `limit` starts can hold the endpoint back.
    if (starts.length > limit) starts.splice(0, starts.length - limit);
    this.#windows.set(endpointId, { limit, starts });
  }

  /** The endpoints with no room at `nowMs` (under their limit as last noted), for the claim to skip unread. */
  full(nowMs: number): string[] {
    this.#prune(nowMs);
    return [...this.#windows]
      .filter(([id, w]) => this.room(id, w.limit, nowMs) === 0)
      .map(([id]) => id);
  }

  /** The earliest time (ms) after `nowMs` an endpoint with no room may start again, or undefined when none is full: when
   *  a due event held back by its endpoint's rate can go. */
  nextFreeAt(nowMs: number): number | undefined {
    let next: number | undefined;
    for (const { limit, starts } of this.#windows.values()) {
      if (starts.length < limit) continue;
      const at = starts[starts.length - limit]! + WINDOW_MS;
      if (at > nowMs && (next === undefined || at < next)) next = at;
    }
    return next;
  }

  /** The endpoint's starts within the second before `nowMs`: older ones are dropped, and so are times after `nowMs` (the
   *  clock stepped back: they would hold the endpoint back for as long as the step). */
  #recent(endpointId: string, nowMs: number): number[] {
    const w = this.#windows.get(endpointId);
    if (!w) return [];
    const starts = w.starts.filter((t) => t > nowMs - WINDOW_MS && t <= nowMs);
    if (starts.length === 0) this.#windows.delete(endpointId);
    else w.starts = starts;
    return starts;
  }

  /** Forgets endpoints with no start within the last second, at most once a second (the map stays a second's worth). */
  #prune(nowMs: number): void {
    if (Math.abs(nowMs - this.#prunedAt) < WINDOW_MS) return;
    this.#prunedAt = nowMs;
    for (const id of [...this.#windows.keys()]) this.#recent(id, nowMs);
  }
}
