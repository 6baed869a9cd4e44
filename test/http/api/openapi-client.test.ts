// A client generated from the served OpenAPI document is what integrators live on: openapi-typescript's types of the
// document type-check (strictly, as this project compiles) a small openapi-fetch client that creates an endpoint and a
// subscription with metadata, and that client then runs against the real server on 127.0.0.1.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { request } from 'undici';
import { listenHttp } from '../../../src/http/listen.ts';
import { createHttpApp } from '../../../src/http/server.ts';
import { silentLogger } from '../../../src/log.ts';
import { makeWorld, type World } from '../../support/world.ts';
import { tsImport } from 'tsx/esm/api';

const ROOT = new URL('../../../', import.meta.url).pathname;

// The client an integrator would write. Each line leans on the generated types: a metadata object of the client's
// own shape, an id read back from a typed response, a path parameter, and the problem of a typed error response.
const CLIENT = `
import createClient from 'openapi-fetch';
import type { paths } from './schema.ts';

export async function run(baseUrl: string, key: string) {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: key } });
  const endpoint = await api.POST('/v1/endpoints', {
    body: { title: 'Receiver', url: 'https://hooks.example.com/in' },
  });
  if (!endpoint.data) throw new Error('no endpoint: ' + JSON.stringify(endpoint.error));
  const metadata = { team: 'alpha', tags: ['a', 'b'], limits: { n: 1.5 } };
  const created = await api.POST('/v1/subscriptions', {
    body: { endpoint: endpoint.data.id, url: 'https://blog.example.com/feed.xml', metadata },
    headers: { 'Idempotency-Key': 'subscribe-blog' },
  });
  if (!created.data) throw new Error('no subscription: ' + JSON.stringify(created.error));
  const read = await api.GET('/v1/subscriptions/{id}', {
    params: { path: { id: created.data.id } },
  });
  const team: unknown = read.data?.metadata?.team;
  const missing = await api.GET('/v1/endpoints/{id}', {
    params: { path: { id: '0'.repeat(24) } },
  });
  const problem: { status: number; detail: string } | undefined = missing.error;
  return {
    endpoint: endpoint.data.id,
    secret: endpoint.data.secret,
    metadata: read.data?.metadata,
    team,
    missing: { status: missing.response.status, problem },
  };
}
`;

describe('a client generated from /v1/openapi.json', () => {
  let w: World;
  let server: Server;
  let baseUrl: string;
  let dir: string;
  before(async () => {
    w = makeWorld();
    server = await listenHttp(createHttpApp(w.ctx, silentLogger).fetch, {
      hostname: '127.0.0.1',
      port: 0,
      logger: silentLogger,
    });
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Under the repository, so the client resolves openapi-fetch from its node_modules like an integrator's project.
    mkdirSync(join(ROOT, 'node_modules/.cache'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'node_modules/.cache/feedsub-openapi-client-'));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('type-checks strictly, then creates an endpoint and a subscription with metadata on the real server', async () => {
    // On a connection closed after it: the type-check below holds the event loop for seconds, past the server's
    // keep-alive, and a client reusing that socket would meet the server's close as a reset.
    const doc = (await (
      await request(`${baseUrl}/v1/openapi.json`, { reset: true })
    ).body.json()) as Parameters<typeof openapiTS>[0];
    writeFileSync(join(dir, 'schema.ts'), astToString(await openapiTS(doc)));
    const client = join(dir, 'client.ts');
    writeFileSync(client, CLIENT);

    assert.deepEqual(typeErrors(client), []);

    // tsImport: the client is TypeScript, imported the same way under tsx and from the test runner's bundle.
    const { run } = (await tsImport(pathToFileURL(client).href, import.meta.url)) as {
      run(baseUrl: string, key: string): Promise<Record<string, unknown>>;
    };
    const result = await run(baseUrl, (await w.key()).key);
    assert.match(String(result.endpoint), /^[0-9a-f]{24}$/);
    assert.match(String(result.secret), /^whsec_/);
    assert.deepEqual(result.metadata, { team: 'alpha', tags: ['a', 'b'], limits: { n: 1.5 } });
    assert.equal(result.team, 'alpha');
    assert.deepEqual(result.missing, {
      status: 404,
      problem: {
        type: 'about:blank',
        title: 'Not found',
        status: 404,
        detail: 'Endpoint not found.',
      },
    });
  });
});

/** tsc's diagnostics for `file` under the project's own compiler options (strict, NodeNext, …). */
function typeErrors(file: string): string[] {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (p) => ts.sys.readFile(p));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const program = ts.createProgram([file], { ...options, noEmit: true });
  return ts
    .getPreEmitDiagnostics(program)
    .map(
      (d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
    );
}
