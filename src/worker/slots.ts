// Concurrency slots counted in all and per key (an endpoint today), each taken slot freed exactly once.

/** Slots in use, in all and per key. */
export class SlotCounter {
  #total = 0;
  readonly #byKey = new Map<string, number>();

  /** Slots in use in all. */
  get total(): number {
    return this.#total;
  }

  /** Slots in use per key; a key with none in use is absent. */
  get byKey(): ReadonlyMap<string, number> {
    return this.#byKey;
  }

  /** Takes a slot for `key`. The returned release frees it and returns true the first time it is called, and only
   *  returns false after, so whichever of several finishing paths comes first frees the slot. */
  take(key: string): () => boolean {
    this.#total += 1;
    this.#byKey.set(key, (this.#byKey.get(key) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return false;
      held = false;
      this.#total -= 1;
      const left = (this.#byKey.get(key) ?? 1) - 1;
      if (left > 0) this.#byKey.set(key, left);
      else this.#byKey.delete(key);
      return true;
    };
  }
}
