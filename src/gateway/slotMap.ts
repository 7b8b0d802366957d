/**
 * A map for the per-call bookkeeping of one session or connection, which
 * nearly always holds one entry at a time: that entry is kept in fields, and
 * a `Map` is made only while a second one is there. A `Map` that goes from
 * one entry to none gives back its table (V8 shrinks it on delete), so a
 * set and delete per call allocated about 150 bytes (docs/performance.md,
 * "Gateway over HTTP"); here they allocate nothing.
 */
export class SlotMap<K, V> {
  #hasSlot = false;
  #slotKey: K | undefined;
  #slotValue: V | undefined;
  /** The entries beyond the slot, made when a second entry comes and kept from then on. */
  #more: Map<K, V> | undefined;

  /** How many entries it holds. */
  get size(): number {
    return (this.#hasSlot ? 1 : 0) + (this.#more?.size ?? 0);
  }

  /** Whether `key` is the slot's key, as `Map` compares keys (SameValueZero). */
  #inSlot(key: K): boolean {
    const slot = this.#slotKey;
    return this.#hasSlot && (slot === key || (slot !== slot && key !== key));
  }

  /** The value of `key`, or undefined. */
  get(key: K): V | undefined {
    return this.#inSlot(key) ? this.#slotValue : this.#more?.get(key);
  }

  /** Whether it holds `key`. */
  has(key: K): boolean {
    return this.#inSlot(key) || (this.#more?.has(key) ?? false);
  }

  /** Sets `key` to `value`. */
  set(key: K, value: V): this {
    if (this.#inSlot(key)) this.#slotValue = value;
    else if (this.#more?.has(key) === true) this.#more.set(key, value);
    else if (!this.#hasSlot) {
      this.#hasSlot = true;
      this.#slotKey = key;
      this.#slotValue = value;
    } else (this.#more ??= new Map()).set(key, value);
    return this;
  }

  /** Removes `key`; whether it was there. */
  delete(key: K): boolean {
    if (!this.#inSlot(key)) return this.#more?.delete(key) ?? false;
    this.#hasSlot = false;
    this.#slotKey = undefined;
    this.#slotValue = undefined;
    return true;
  }

  /** Its keys now, as an array (changing the map afterwards does not change it). */
  keys(): K[] {
    const keys = this.#more === undefined ? [] : [...this.#more.keys()];
    if (this.#hasSlot) keys.unshift(this.#slotKey as K);
    return keys;
  }

  /** Its values now, as an array (changing the map afterwards does not change it). */
  values(): V[] {
    const values = this.#more === undefined ? [] : [...this.#more.values()];
    if (this.#hasSlot) values.unshift(this.#slotValue as V);
    return values;
  }

  /** Removes every entry. */
  clear(): void {
    this.#hasSlot = false;
    this.#slotKey = undefined;
    this.#slotValue = undefined;
    this.#more?.clear();
  }
}
