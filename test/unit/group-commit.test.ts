/**
 * Group commit: calls of one turn share one write; with a window, calls that arrive one turn
 * after another (sends finishing one by one) share it too; a full batch does not wait; each
 * caller gets its own answer, or the write's error.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/app/group-commit.js';

function recorder() {
  const writes: number[][] = [];
  const write = async (items: number[]) => {
    writes.push([...items]);
    return items.map((i) => i * 10);
  };
  return { writes, write };
}

describe('GroupCommit', () => {
  it('without a window: calls of one turn are one write, calls of later turns another', async () => {
    const { writes, write } = recorder();
    const g = new GroupCommit(write);
    const first = [g.add(1), g.add(2)];
    await nextTurn();
    const later = g.add(3);
    expect(await Promise.all([...first, later])).toEqual([10, 20, 30]);
    expect(writes).toEqual([[1, 2], [3]]);
  });

  it('with a window: calls of several turns within it are one write, each with its own answer', async () => {
    const { writes, write } = recorder();
    const g = new GroupCommit(write, 200, 200);
    const answers: Promise<number>[] = [];
    for (let i = 1; i <= 5; i++) {
      answers.push(g.add(i));
      await nextTurn();
    }
    expect(await Promise.all(answers)).toEqual([10, 20, 30, 40, 50]);
    expect(writes).toEqual([[1, 2, 3, 4, 5]]);
  });

  it('with a window: a full batch is written without waiting for it, the rest after', async () => {
    const { writes, write } = recorder();
    const g = new GroupCommit(write, 2, 60_000);
    // the window is a minute: the test would time out if the full batch waited for it
    const full = [g.add(1), g.add(2), g.add(3)];
    expect(await Promise.all(full.slice(0, 2))).toEqual([10, 20]);
    expect(writes[0]).toEqual([1, 2]);
    expect(await full[2]).toBe(30);
    expect(writes).toEqual([[1, 2], [3]]);
  }, 10_000);

  it('a failed write rejects every call of its group, and the next group is written', async () => {
    let fail = true;
    const g = new GroupCommit(
      async (items: number[]) => {
        if (fail) throw new Error('disk full');
        return items;
      },
      200,
      5,
    );
    const a = g.add(1);
    const b = g.add(2);
    await expect(a).rejects.toThrow('disk full');
    await expect(b).rejects.toThrow('disk full');
    fail = false;
    expect(await g.add(3)).toBe(3);
  });
});
