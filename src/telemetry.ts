// What the loops report as they work; the metrics module implements it, tests and one-shot commands ignore it.

export type Telemetry = {
  /** One feed refresh finished with this outcome kind after `durationMs`. */
  polled(
    outcome: 'parsed' | 'unchanged' | 'gone' | 'throttled' | 'error',
    durationMs: number,
  ): void;
  /** One delivery attempt to endpoint `endpointId` finished; `latencyMs` (event created → delivered) only when it
   *  succeeded. */
  attempted(
    outcome: 'delivered' | 'retry' | 'dead',
    durationMs: number,
    latencyMs: number | null,
    endpointId: string,
  ): void;
  /** The checkpoint thread found the WAL `walFrames` pages long, `checkpointedFrames` of them copied into the database. */
  checkpointed(walFrames: number, checkpointedFrames: number): void;
  /** A maintenance pass counted what the bounded tables hold: entry keys, held entries, feeds no subscription uses. */
  retained(counts: { entryKeys: number; heldEntries: number; orphanedFeeds: number }): void;
};

/** Telemetry that records nothing. */
export const noTelemetry: Telemetry = {
  polled: () => {},
  attempted: () => {},
  checkpointed: () => {},
  retained: () => {},
};
