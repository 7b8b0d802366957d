/**
 * SlotMap keeps one entry in fields and the rest in a Map: whatever the
 * order of sets and deletes, it must answer as a Map would. Random
 * operations on small key spaces (so that keys collide, the slot empties and
 * refills while the Map holds others) are run against a real Map.
 */
import { describe, expect, it } from 'vitest';
import { SlotMap } from '../../src/gateway/slotMap.js';

/** A small deterministic generator, so that a failure repeats. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

describe('SlotMap', () => {
  it('answers get, has, set, delete, size, keys, values and clear as a Map does', () => {
    const keys: (string | number)[] = [0, 1, 2, '1', 'a', -0, Number.NaN];
    for (let seed = 1; seed <= 40; seed++) {
      const next = random(seed);
      const slot = new SlotMap<string | number, number>();
      const map = new Map<string | number, number>();
      for (let step = 0; step < 400; step++) {
        const key = keys[Math.floor(next() * keys.length)] as string | number;
        const op = next();
        if (op < 0.45) expect(slot.set(key, step)).toBe(slot), map.set(key, step);
        else if (op < 0.9) expect(slot.delete(key)).toBe(map.delete(key));
        else if (op < 0.93) slot.clear(), map.clear();
        expect(slot.size).toBe(map.size);
        expect(slot.get(key)).toBe(map.get(key));
        expect(slot.has(key)).toBe(map.has(key));
        expect(new Set(slot.keys())).toEqual(new Set(map.keys()));
        expect([...slot.values()].sort()).toEqual([...map.values()].sort());
      }
    }
  });

  it('gives arrays that later changes leave alone', () => {
    const slot = new SlotMap<string, number>();
    slot.set('a', 1).set('b', 2);
    const keys = slot.keys();
    const values = slot.values();
    slot.delete('a');
    slot.set('c', 3);
    expect(keys).toEqual(['a', 'b']);
    expect(values).toEqual([1, 2]);
    expect(slot.keys().sort()).toEqual(['b', 'c']);
  });
});
