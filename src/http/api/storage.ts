// /v1/storage: what the caller's application keeps against its storage budget (quotas.storage_bytes_per_application).
import { Hono } from 'hono';
import type { Ctx } from '../../context.ts';
import { storageView } from '../../actions/budget.ts';
import type { ApiEnv } from '../auth.ts';
import { sendJson } from '../json.ts';

/** The storage sub-app. */
export function storageApi(ctx: Ctx): Hono<ApiEnv> {
  return new Hono<ApiEnv>().get('/', async (c) =>
    sendJson(c, 200, await storageView(ctx, c.get('applicationId'))),
  );
}
