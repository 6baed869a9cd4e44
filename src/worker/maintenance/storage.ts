// The storage part of maintenance: recounts each application's sums of what it keeps (the feeds only it uses, its
// events) from the rows, a chunk per transaction with a turn of the event loop between two, exactly: a change made
// behind the walk meanwhile is added to what it counted (store/storage.ts walkStorage).
import { nextTurn } from '../../actions/chunks.ts';
import { transaction, type Ctx } from '../../context.ts';
import {
  applicationsAfter,
  finishStorageWalk,
  walkStorage,
  type StoragePart,
} from '../../store/storage.ts';

/** What a recount found: how many applications, and by how many bytes their sums were off in all. */
export type StorageRecount = { applications: number; driftBytes: number };

/** Feeds or events summed per transaction: small rows read along the application's index, a short transaction. */
const WALK_ROWS = 1000;
const APPLICATIONS_PER_STEP = 100;

/** Recounts every application's sums (see the file comment). */
export async function recountStorage(ctx: Ctx): Promise<StorageRecount> {
  const result: StorageRecount = { applications: 0, driftBytes: 0 };
  for (let after = ''; ;) {
    const applications = await applicationsAfter(ctx.db, after, APPLICATIONS_PER_STEP);
    for (const app of applications) {
      result.applications += 1;
      for (const part of ['feed', 'event'] as const)
        result.driftBytes += Math.abs(await recountPart(ctx, app, part));
    }
    if (applications.length < APPLICATIONS_PER_STEP) return result;
    after = applications.at(-1)!;
    await nextTurn();
  }
}

/** Walks one of an application's sums to its end; returns by how many bytes it was off. */
async function recountPart(ctx: Ctx, applicationId: string, part: StoragePart): Promise<number> {
  let counted = 0;
  let after: string | null = null;
  for (;;) {
    const drift = await transaction(ctx, async (tx) => {
      const step = await walkStorage(tx.db, applicationId, part, after, WALK_ROWS);
      counted += step.bytes;
      after = step.last ?? after ?? '';
      return step.n < WALK_ROWS
        ? await finishStorageWalk(tx.db, applicationId, part, counted)
        : null;
    });
    if (drift !== null) return drift;
    await nextTurn();
  }
}
