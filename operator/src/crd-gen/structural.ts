/**
 * zod -> JSON Schema (zod's own `toJSONSchema`, OpenAPI 3.0 target) -> a Kubernetes structural
 * schema. The rewriter does what the apiserver requires of a CRD schema and zod does not know:
 *
 * - `additionalProperties` and `properties` are mutually exclusive: `additionalProperties: false`
 *   (from strict objects) is dropped; the apiserver prunes unknown fields and strict field
 *   validation (kubectl's default) reports them by name;
 * - int-or-string unions (resource quantities) become `x-kubernetes-int-or-string` with the
 *   `anyOf: [integer, string]` form the apiserver accepts;
 * - `$schema`, `$ref` and zod's safe-integer bounds go; a `$ref` is an error (no shared
 *   definitions in a CRD).
 */
import { z } from 'zod';

export type JsonSchema = { [key: string]: unknown };

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

export function toStructuralSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw' });
  return rewrite(json as JsonSchema, '');
}

function rewrite(node: JsonSchema, path: string): JsonSchema {
  if ('$ref' in node) throw new Error(`${path || '<root>'}: $ref is not allowed in a CRD schema`);
  if (node['x-kubernetes-int-or-string'] === true) return intOrString(node);
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$schema' || key === 'id' || key === '$id') continue;
    if (key === 'maximum' && value === MAX_SAFE) continue;
    if (key === 'minimum' && value === -MAX_SAFE) continue;
    if (key === 'properties') {
      out[key] = rewriteProperties(value as Record<string, JsonSchema>, path);
    } else if (key === 'items') {
      out[key] = rewrite(value as JsonSchema, `${path}[]`);
    } else if (key === 'additionalProperties') {
      if (typeof value === 'object' && value !== null && !('properties' in node)) {
        out[key] = rewrite(value as JsonSchema, `${path}{}`);
      }
    } else {
      out[key] = value;
    }
  }
  if (out['type'] === undefined && out['x-kubernetes-preserve-unknown-fields'] !== true) {
    throw new Error(`${path || '<root>'}: a structural schema needs a type (${JSON.stringify(node)})`);
  }
  return out;
}

function rewriteProperties(properties: Record<string, JsonSchema>, path: string): JsonSchema {
  const out: JsonSchema = {};
  for (const [name, schema] of Object.entries(properties)) out[name] = rewrite(schema, `${path}.${name}`);
  return out;
}

function intOrString(node: JsonSchema): JsonSchema {
  const branches = (node['anyOf'] ?? []) as JsonSchema[];
  const stringBranch = branches.find((branch) => branch['type'] === 'string');
  const out: JsonSchema = {};
  if (typeof node['description'] === 'string') out['description'] = node['description'];
  if (node['default'] !== undefined) out['default'] = node['default'];
  out['anyOf'] = [{ type: 'integer' }, { type: 'string' }];
  if (typeof stringBranch?.['pattern'] === 'string') out['pattern'] = stringBranch['pattern'];
  out['x-kubernetes-int-or-string'] = true;
  if (node['x-kubernetes-validations'] !== undefined) out['x-kubernetes-validations'] = node['x-kubernetes-validations'];
  return out;
}
