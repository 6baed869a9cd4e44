// valibot schemas → the JSON Schemas of the OpenAPI document (@valibot/to-json-schema), and the few overrides for what
// the converter cannot read: custom schemas and checks are functions, so each is said here in JSON Schema.
import { toJsonSchema, type ConversionConfig, type JsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import {
  HEADER_NAME,
  HeaderRules,
  HeadersShape,
  HeaderValue,
  MAX_HEADERS,
} from '../../../actions/endpoint-options.ts';
import { DistinctTypes, IsDateTime } from '../../../actions/endpoints.ts';
import { OneTest } from '../../../actions/filter.ts';
import { JsonObject } from '../../../actions/subscriptions.ts';
import { IsHttpUrl } from '../../../actions/validate.ts';

/** A JSON Schema or OpenAPI object, as plain data (a valibot schema in it is converted when the document is built). */
export type Schema = Record<string, unknown>;

/** A valibot schema, as the document's parts give them. */
export type ValibotSchema = v.GenericSchema;
/** Named valibot schemas: the document's components. */
export type Components = Record<string, ValibotSchema>;

/** What each custom schema accepts. */
const CUSTOM_SCHEMAS: ReadonlyMap<unknown, JsonSchema> = new Map<unknown, JsonSchema>([
  [JsonObject, { type: 'object', additionalProperties: true }],
  [HeadersShape, { type: 'object' }],
]);

/** What each check adds to the schema it checks. */
const CHECKS: ReadonlyMap<unknown, (schema: JsonSchema) => JsonSchema> = new Map<
  unknown,
  (schema: JsonSchema) => JsonSchema
>([
  [IsHttpUrl, (s) => ({ ...s, format: 'uri' })],
  [IsDateTime, (s) => ({ ...s, format: 'date-time' })],
  [DistinctTypes, (s) => ({ ...s, uniqueItems: true })],
  [OneTest, (s) => ({ ...s, oneOf: [{ required: ['contains'] }, { required: ['matches'] }] })],
  [
    HeaderRules,
    (s) => ({
      ...s,
      maxProperties: MAX_HEADERS,
      propertyNames: { pattern: HEADER_NAME.source },
      additionalProperties: toSchema(HeaderValue) as JsonSchema,
    }),
  ],
]);

/** The custom schemas and checks the overrides above stand for (a test checks the document uses each). */
export const OVERRIDDEN: readonly unknown[] = [...CUSTOM_SCHEMAS.keys(), ...CHECKS.keys()];

/** The conversion: JSON Schema 2020-12 (OpenAPI 3.1's dialect); `trim` is left out (it changes a string, not what
 *  one is valid); anything else the converter cannot read throws, so a new check cannot slip into the document
 *  unsaid. */
function config(typeMode: 'input' | 'output', components: Components): ConversionConfig {
  return {
    target: 'draft-2020-12',
    typeMode,
    errorMode: 'throw',
    ignoreActions: ['trim'],
    definitions: components,
    overrideSchema: ({ valibotSchema }) => CUSTOM_SCHEMAS.get(valibotSchema),
    overrideAction: ({ valibotAction, jsonSchema }) => CHECKS.get(valibotAction)?.(jsonSchema),
    overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
  };
}

/** The JSON Schema of what a client sends or receives as `schema` describes it (a pipe up to its first transform); a
 *  schema that is one of `components` is a reference to it. */
export function toSchema(schema: ValibotSchema, components: Components = {}): Schema {
  return bare(toJsonSchema(schema, config('input', components)));
}

/** A query parameter read with `schema`: described by what the schema makes of the text (`limit`'s digits are an
 *  integer), with the schema's description as the parameter's, `required` unless the schema takes an absent
 *  parameter, and for a default what the schema makes of an absent parameter. */
export function queryParameter(name: string, schema: ValibotSchema, description?: string): Schema {
  const { description: own, ...converted } = bare(toJsonSchema(schema, config('output', {})));
  const absent = v.safeParse(schema, undefined);
  if (absent.success && absent.output !== undefined) converted.default = absent.output;
  const text = description ?? own;
  return {
    name,
    in: 'query',
    ...(absent.success ? {} : { required: true }),
    ...(typeof text === 'string' ? { description: text } : {}),
    schema: converted,
  };
}

/** The parameters of a query string an object schema reads, in its order. */
export function queryParameters(
  schema: v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>,
): Schema[] {
  return Object.entries(schema.entries).map(([name, entry]) => queryParameter(name, entry));
}

/** `tree` (paths, webhooks) with every valibot schema in it converted, and the components' JSON Schemas: a schema that
 *  is one of `components` is a reference to it wherever it is used. One conversion of them all, so each component is
 *  converted once however often it is used. */
export function convertSchemas<T>(
  tree: T,
  components: Components,
): { tree: T; components: Record<string, Schema> } {
  const found = new Map<ValibotSchema, string>();
  collect(tree, found);
  const all = v.object(Object.fromEntries([...found].map(([schema, key]) => [key, schema])));
  const json = toJsonSchema(all, config('input', components));
  const converted = json.properties as Record<string, Schema>;
  const replace = (node: unknown): unknown => {
    const key = isValibotSchema(node) ? found.get(node) : undefined;
    if (key !== undefined) return converted[key];
    if (Array.isArray(node)) return node.map(replace);
    if (node === null || typeof node !== 'object') return node;
    return Object.fromEntries(Object.entries(node).map(([k, value]) => [k, replace(value)]));
  };
  return { tree: replace(tree) as T, components: (json.$defs ?? {}) as Record<string, Schema> };
}

/** Gives every valibot schema in `node` a key of its own in `found`. */
function collect(node: unknown, found: Map<ValibotSchema, string>): void {
  if (isValibotSchema(node)) {
    if (!found.has(node)) found.set(node, String(found.size));
  } else if (Array.isArray(node)) for (const item of node) collect(item, found);
  else if (node !== null && typeof node === 'object')
    for (const value of Object.values(node)) collect(value, found);
}

/** True for a valibot schema: JSON never holds a function. */
export function isValibotSchema(node: unknown): node is ValibotSchema {
  return (
    typeof node === 'object' &&
    node !== null &&
    (node as { kind?: unknown }).kind === 'schema' &&
    typeof (node as { '~run'?: unknown })['~run'] === 'function'
  );
}

/** The converted schema without the keywords of a standalone document ($schema, and $defs: the components are the
 *  document's). */
function bare(json: JsonSchema): Schema {
  const { $schema: _dialect, $defs: _defs, ...rest } = json;
  return rest as Schema;
}
