// Checks an API response against the OpenAPI document the app serves: the status is one the operation lists, the
// content type one that status lists, the JSON body valid against its schema, every required header present. World's
// call() runs it on every /v1 response, so every API test also tests the document. It also says what the document
// refuses in a request body or a query parameter, for the tests that compare it with what the routes refuse.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { AssertionError } from 'node:assert';
import { openapiDocument } from '../../src/http/api/openapi.ts';

type Content = Record<string, { schema?: unknown }>;
type DocResponse = { content?: Content; headers?: Record<string, { required?: boolean }> };
type Parameter = { name: string; in: string; schema?: { type?: unknown } };
type Operation = { responses: Record<string, DocResponse>; parameters?: Parameter[] };
type Document = { paths: Record<string, Record<string, Operation>> };
type Route = { template: string; pattern: RegExp; params: number };

/** A response as the check sees it. */
export type CheckedResponse = { status: number; headers: Headers; text: string };
/** What the document finds wrong with a value: where (a JSON pointer into it), the keyword, its parameters. */
export type SchemaIssue = {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
};

/** Validates responses against one document; schemas are compiled on first use and kept. */
export class OpenApiChecker {
  readonly #doc: Document;
  readonly #ajv: Ajv2020;
  readonly #routes: Route[];
  readonly #validators = new Map<string, ValidateFunction>();

  constructor(doc: object) {
    this.#doc = doc as Document;
    // OpenAPI 3.1 schemas are JSON Schema 2020-12. strict is off because the document is added whole (paths,
    // parameters…) so that a schema's #/components/schemas/… references resolve against it.
    this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    this.#ajv.addFormat(
      'date-time',
      (s: string) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)),
    );
    this.#ajv.addFormat('uri', (s: string) => URL.canParse(s));
    this.#ajv.addSchema(doc, 'openapi');
    this.#routes = Object.keys(this.#doc.paths)
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
        params: (template.match(/\{/g) ?? []).length,
      }))
      .sort((a, b) => a.params - b.params); // a literal segment wins over a parameter (…/import over …/{id})
  }

  /** Throws an AssertionError naming what the document does not allow; a path or method the document does not list
   *  (the 404 of an unknown route) is not checked. */
  check(method: string, url: string, res: CheckedResponse): void {
    const path = url.split('?')[0]!;
    const route = this.#routes.find((r) => r.pattern.test(path));
    const m = method.toLowerCase();
    const op = route && this.#doc.paths[route.template]![m];
    if (!route || !op) return;
    const where = `${method} ${url} → ${res.status}`;
    const status = [String(res.status), `${String(res.status)[0]}XX`, 'default'].find(
      (s) => op.responses[s],
    );
    if (!status)
      fail(`${where}: the document lists no such status for ${m} ${route.template}`, res);
    const documented = op.responses[status]!;
    for (const [name, header] of Object.entries(documented.headers ?? {}))
      if (header.required && !res.headers.has(name)) fail(`${where}: no ${name} header`, res);
    if (!documented.content) {
      if (res.text !== '') fail(`${where}: a body where the document lists none`, res);
      return;
    }
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    if (!documented.content[type])
      fail(`${where}: content type "${type}", not one of ${Object.keys(documented.content)}`, res);
    if (type !== 'application/json' && type !== 'application/problem+json') return;
    const pointer = ['paths', route.template, m, 'responses', status, 'content', type, 'schema'];
    const validate = this.#validator(pointer);
    if (!validate(JSON.parse(res.text)))
      fail(`${where}: ${this.#ajv.errorsText(validate.errors, { dataVar: 'body' })}`, res);
  }

  /** Throws an AssertionError unless `body` (JSON text) is a valid request body of the webhook named `type`. */
  checkWebhook(type: string, body: string): void {
    const webhooks = (this.#doc as { webhooks?: Record<string, unknown> }).webhooks ?? {};
    if (!webhooks[type]) throw new AssertionError({ message: `OpenAPI: no webhook ${type}` });
    const pointer = ['webhooks', type, 'post', 'requestBody', 'content', 'application/json'];
    const validate = this.#validator([...pointer, 'schema']);
    if (!validate(JSON.parse(body)))
      throw new AssertionError({
        message: `OpenAPI: webhook ${type}: ${this.#ajv.errorsText(validate.errors, { dataVar: 'body' })}\n${body}`,
      });
  }

  /** What the document finds wrong with `body` as the JSON request body of `method template` (none: it allows it). */
  requestIssues(method: string, template: string, body: unknown): SchemaIssue[] {
    const m = method.toLowerCase();
    const pointer = ['paths', template, m, 'requestBody', 'content', 'application/json', 'schema'];
    return this.#issues(pointer, body);
  }

  /** What the document finds wrong with `text` as the query parameter `name` of `method template`: a number where
   *  the parameter is one, as a client would serialize it, else the text itself. */
  queryIssues(method: string, template: string, name: string, text: string): SchemaIssue[] {
    const m = method.toLowerCase();
    const parameters = this.#doc.paths[template]![m]!.parameters ?? [];
    const at = parameters.findIndex((p) => p.in === 'query' && p.name === name);
    if (at < 0) throw new AssertionError({ message: `OpenAPI: ${m} ${template} has no ${name}` });
    const type = parameters[at]!.schema?.type;
    const numeric = (type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(text);
    const pointer = ['paths', template, m, 'parameters', String(at), 'schema'];
    return this.#issues(pointer, numeric ? Number(text) : text);
  }

  #issues(pointer: string[], value: unknown): SchemaIssue[] {
    const validate = this.#validator(pointer);
    return validate(value)
      ? []
      : (validate.errors ?? []).map(({ instancePath, keyword, params }) => ({
          instancePath,
          keyword,
          params,
        }));
  }

  #validator(pointer: string[]): ValidateFunction {
    const ref = `openapi#/${pointer.map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;
    let validate = this.#validators.get(ref);
    if (!validate) {
      validate = this.#ajv.compile({ $ref: ref });
      this.#validators.set(ref, validate);
    }
    return validate;
  }
}

const DATE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;

function fail(message: string, res: CheckedResponse): never {
  throw new AssertionError({ message: `OpenAPI: ${message}\n${res.text.slice(0, 2000)}` });
}

let shared: OpenApiChecker | undefined;
/** The checker of the document the app serves, built once per test process (the document is a pure function). */
export function openapiChecker(): OpenApiChecker {
  shared ??= new OpenApiChecker(openapiDocument());
  return shared;
}
