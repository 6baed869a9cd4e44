// Which endpoints answered in time, in memory: an endpoint not yet proven in this process, or whose last attempt ran
// into its deadline, gets one attempt in flight until one succeeds, so a slow receiver holds one slot, not its cap.

/** Endpoints remembered at most; past it the oldest is forgotten (it then starts again at one attempt in flight). */
const MAX_REMEMBERED = 100_000;

/** The endpoints proven in this process: a 2xx answered within the deadline since their last timed-out attempt. */
export class EndpointHealth {
  readonly #proven = new Set<string>();

  /** True when the endpoint's last finished attempt that decided anything answered in time. */
  proven(endpointId: string): boolean {
    return this.#proven.has(endpointId);
  }

  /** The endpoint's cap now: `full` (this node's share of delivery.per_endpoint_concurrency) once proven, else 1 (or
   *  `full`, when that is 0). */
  capOf(endpointId: string, full: number): number {
    return this.#proven.has(endpointId) ? full : Math.min(1, full);
  }

  /** Notes an attempt's end: one that ran into its deadline demotes the endpoint, a 2xx in time proves it; any other
   *  answer (a quick 500, a refused connection) changes nothing. */
  attempted(endpointId: string, result: { ok: boolean; timedOut: boolean }): void {
    if (result.timedOut) this.#proven.delete(endpointId);
    else if (result.ok && !this.#proven.has(endpointId)) {
      this.#proven.add(endpointId);
      if (this.#proven.size > MAX_REMEMBERED)
        this.#proven.delete(this.#proven.values().next().value as string);
    }
  }
}
