/**
 * What each route can answer, for the OpenAPI document: every status code and every media type,
 * so that clients generated from the document handle errors instead of meeting them as
 * surprises. A route declares its answers beside its handler, as `config: { responses }`; the
 * swagger transform (openapi.ts) turns them into OpenAPI response objects, merged with the
 * JSON schemas that zod response schemas give, and adds what every route can answer (500 and
 * 503, from the error handler).
 */
import { MediaType, type MediaTypeValue } from './streams/media-types.js';

export interface ResponseDoc {
  readonly description: string;
  /** Media types of the body; none (or empty) when the answer has no body. */
  readonly mediaTypes?: readonly string[];
}

/** Status code → what it means on this route. */
export type ResponseDocs = Readonly<Record<number, ResponseDoc>>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's answers, for the OpenAPI document (see openapi-responses.ts). */
    responses?: ResponseDocs;
  }
}

type JsonSchema = Record<string, unknown>;


/**
 * An error's message comes in the type Accept names (api/error-body.ts): text/plain (also when
 * nothing matches), JSON `{status, error, message}` for JSON types, XML for XML types.
 */
export const ERROR_MEDIA_TYPES: readonly string[] = [MediaType.PlainText, 'application/json', 'application/xml'];

const ERROR_JSON_SCHEMA: JsonSchema = {
  type: 'object',
  properties: { status: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' } },
  required: ['status', 'error', 'message'],
};

/** The usual meaning of each error status here; a body is a message in the negotiated type. */
const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'Bad request: the message says what is wrong (bad parameter, header or body, wrong expected version)',
  401: 'Credentials missing, wrong, or not allowed by the ACL',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed on this path',
  406: 'None of the media types in Accept (or ?format=) is served here',
  408: 'The request took too long',
  409: 'Conflict with the current state',
  410: 'The stream is deleted',
  413: 'Request body over the limit',
  415: 'Content-Type not accepted here',
};

/** Standard error answers, each with a text/plain message. */
export function errorResponses(...statuses: number[]): ResponseDocs {
  const docs: Record<number, ResponseDoc> = {};
  for (const status of statuses) {
    docs[status] = { description: ERROR_DESCRIPTIONS[status] ?? `HTTP ${status}`, mediaTypes: ERROR_MEDIA_TYPES };
  }
  return docs;
}

/** What every route can answer: an unexpected failure, or a node that is not ready. */
export const EVERY_ROUTE_RESPONSES: ResponseDocs = {
  500: { description: 'Internal error or write timeout (a message)', mediaTypes: ERROR_MEDIA_TYPES },
  503: { description: 'The node is not ready, shutting down, or too busy', mediaTypes: ERROR_MEDIA_TYPES },
};


interface OpenApiResponse {
  description: string;
  /** `null` marks an answer without a body (so no JSON content is made up for it). */
  type?: 'null';
  content?: Record<string, { schema: JsonSchema }>;
}

/**
 * Response entries in the form @fastify/swagger reads from `schema.response` (`content` per media
 * type): the route's declared answers over the transformed zod schemas (`fromSchemas`, JSON),
 * plus the answers every route has. A JSON media type reuses the schema of its status when zod
 * gave one; XML and text bodies are strings.
 */
export function responseEntries(
  declared: ResponseDocs | undefined,
  fromSchemas: Readonly<Record<string, unknown>> | undefined,
): Record<string, OpenApiResponse> {
  const entries: Record<string, OpenApiResponse> = {};
  for (const [status, schema] of Object.entries(fromSchemas ?? {})) {
    const jsonSchema = schema as JsonSchema;
    entries[status] = {
      description: typeof jsonSchema['description'] === 'string' ? jsonSchema['description'] : 'OK',
      content: { [MediaType.Json]: { schema: jsonSchema } },
    };
  }
  for (const [status, doc] of Object.entries({ ...EVERY_ROUTE_RESPONSES, ...declared })) {
    const known = entries[status]?.content?.[MediaType.Json]?.schema;
    const mediaTypes = doc.mediaTypes ?? [];
    entries[status] = { description: doc.description, type: 'null' };
    if (mediaTypes.length === 0) continue;
    const content: Record<string, { schema: JsonSchema }> = {};
    for (const mediaType of mediaTypes) {
      const isJson = mediaType === MediaType.Json || mediaType.endsWith('+json');
      const schema = isJson && known !== undefined ? known : isJson && Number(status) >= 400 ? ERROR_JSON_SCHEMA : { type: 'string' };
      content[mediaType] = { schema };
    }
    entries[status] = { description: doc.description, content };
  }
  return entries;
}
