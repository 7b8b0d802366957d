/**
 * What a gateway lists from its plugins (tools, resources, prompts) is built
 * on demand and kept until the set of active plugins changes.
 */
import { okAsync, type ResultAsync } from 'neverthrow';
import type { HostError } from '../errors/HostError.js';

/** A value built on demand and kept until {@link InvalidatedCache.invalidate}. */
export class InvalidatedCache<T> {
  readonly #build: () => ResultAsync<T, HostError>;
  #cached: T | undefined;
  #generation = 0;

  constructor(build: () => ResultAsync<T, HostError>) {
    this.#build = build;
  }

  /** Forgets the kept value; the next {@link InvalidatedCache.get} builds it again. */
  invalidate(): void {
    this.#cached = undefined;
    this.#generation += 1;
  }

  /** The kept value, or a new build of it. */
  get(): ResultAsync<T, HostError> {
    if (this.#cached !== undefined) return okAsync(this.#cached);
    const generation = this.#generation;
    return this.#build().map((value) => {
      // A value built while the plugins changed is served once, not kept.
      if (generation === this.#generation) this.#cached = value;
      return value;
    });
  }
}
