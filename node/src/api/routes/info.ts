/**
 * `GET /info` (anonymous: version, node state, features, authentication type and, on a node
 * serving TLS, `certificate`: the certificate served, its SANs and validity, the trusted roots,
 * when they were loaded, and the node-to-node links with the certificates each side used) and
 * `GET /info/options` (`$ops`/`$admins`: every option with its value, source, description and
 * schema). Secret options are masked; so, defensively, is anything whose name looks secret.
 */
import { z } from 'zod';

import type { LoadedConfig } from '../../config/load.js';
import { yamlKey } from '../../config/option-names.js';
import { OPTION_NAMES, optionSpec, type OptionName } from '../../config/schema.js';
import type { CertificateInfo } from '../../tls/tls-state.js';
import type { CertificateOnDisk } from '../../tls/on-disk.js';
import type { LastReload } from '../../reload/reload.js';
import type { Authorizer } from '../auth-types.js';
import { authorizeRequest } from '../security/http-auth.js';
import { registerZodScope, type HostApp } from './zod-route-scope.js';
import { errorResponses } from '../openapi-responses.js';

export interface InfoRoutesDeps {
  readonly security: Authorizer;
  readonly loaded: LoadedConfig;
  /** Version reported as `esVersion`, e.g. the package version. */
  readonly version: string;
  /** The certificate served and the trusted roots (`certificate`); absent with --insecure. */
  readonly certificate?: () => CertificateInfo;
  /** The certificate in the certificate file now (served only after a reload); absent with --insecure. */
  readonly certificateOnDisk?: () => CertificateOnDisk;
  /** How the last configuration reload (SIGHUP or endpoint) went. */
  readonly lastReload?: () => LastReload | undefined;
  /** EventStoreDB node state, e.g. 'Leader'; reported lower-cased. Default 'Leader'. */
  readonly nodeState?: () => string;
  readonly features?: {
    readonly projections: boolean;
    readonly userManagement: boolean;
    readonly atomPub: boolean;
  };
}

const MASK = '****';
const SECRET_NAME_PATTERN = /password|secret|token|credential|privatekey/i;

export const InfoResponseSchema = z.object({
  esVersion: z.string(),
  state: z.string(),
  features: z.object({
    projections: z.boolean(),
    userManagement: z.boolean(),
    atomPub: z.boolean(),
  }),
  authentication: z.object({ type: z.string(), properties: z.record(z.string(), z.unknown()) }),
  /** The TLS certificate in force (not in EventStoreDB's /info): lets an operator check a reload. */
  certificate: z
    .object({
      fingerprintSha256: z.string(),
      subject: z.string(),
      commonName: z.string().nullable(),
      issuer: z.string(),
      subjectAltNames: z.array(z.string()),
      serialNumber: z.string(),
      notBefore: z.string(),
      notAfter: z.string(),
      loadedAt: z.string(),
      reservedNodeCommonName: z.string(),
      trustedRoots: z.array(z.object({ fingerprintSha256: z.string(), subject: z.string(), notAfter: z.string() })),
      trustedRootsLoadedAt: z.string(),
      connectionResetIntervalSec: z.number(),
      nodeLinks: z.array(
        z.object({
          direction: z.enum(['incoming', 'outgoing']),
          remoteAddress: z.string(),
          remotePort: z.number(),
          localFingerprintSha256: z.string(),
          peerFingerprintSha256: z.string(),
          peerCommonName: z.string(),
          establishedAt: z.string(),
        }),
      ),
    })
    .optional(),
  /** The certificate file as it is now (not in EventStoreDB's /info): a replaced file is served after a reload. */
  certificateOnDisk: z.object({ fingerprintSha256: z.string().optional(), problem: z.string().optional() }).optional(),
  /** The last configuration reload (SIGHUP or POST /admin/reloadconfig) and, when refused, why. */
  lastReload: z.object({ at: z.string(), result: z.enum(['Applied', 'Refused']), message: z.string().optional() }).optional(),
});

export const OptionInfoSchema = z.object({
  name: z.string(),
  description: z.string(),
  group: z.string(),
  value: z.string(),
  configurationSource: z.string(),
  deprecationMessage: z.string().nullable(),
  schema: z.record(z.string(), z.unknown()),
});

const SOURCE_NAMES = {
  default: 'Default',
  file: 'Yaml',
  env: 'Environment Variables',
  flag: 'Command Line',
} as const;

function lastReloadOf(last: LastReload | undefined): { lastReload?: { at: string; result: 'Applied' | 'Refused'; message?: string } } {
  if (last === undefined) return {};
  return { lastReload: { at: new Date(last.atMs).toISOString(), result: last.result, ...(last.message === undefined ? {} : { message: last.message }) } };
}

export function registerInfoRoutes(app: HostApp, deps: InfoRoutesDeps): void {
  registerZodScope(app, (scope) => {
    scope.get(
      '/info',
      {
        schema: { tags: ['info'], response: { 200: InfoResponseSchema } },
        config: { responses: { 200: { description: 'Version, state and features (anonymous)', mediaTypes: ['application/json'] } } },
      },
      async () => ({
        esVersion: deps.version,
        state: (deps.nodeState?.() ?? 'Leader').toLowerCase(),
        features: deps.features ?? { projections: false, userManagement: true, atomPub: true },
        authentication: { type: 'internal', properties: {} },
        ...(deps.certificate === undefined ? {} : { certificate: deps.certificate() }),
        ...(deps.certificateOnDisk === undefined ? {} : { certificateOnDisk: deps.certificateOnDisk() }),
        ...lastReloadOf(deps.lastReload?.()),
      }),
    );
    scope.get(
      '/info/options',
      {
        schema: { tags: ['info'], response: { 200: z.array(OptionInfoSchema) } },
        config: { responses: { 200: { description: 'Every option, its value and source', mediaTypes: ['application/json'] }, ...errorResponses(401) } },
      },
      async (req, reply) => {
        if (!(await authorizeRequest(deps.security, req, reply, 'ops-or-admins')).allowed)
          return reply;
        return describeOptions(deps.loaded);
      },
    );
  });
}

/** Every option of the node, as `/info/options` reports it. */
export function describeOptions(loaded: LoadedConfig): z.infer<typeof OptionInfoSchema>[] {
  return OPTION_NAMES.map((name) => {
    const spec = optionSpec(name);
    return {
      name: yamlKey(name),
      description: spec.schema.description ?? '',
      group: spec.group,
      value: optionValueText(name, loaded),
      configurationSource: SOURCE_NAMES[loaded.sources[name]],
      deprecationMessage: spec.deprecationMessage ?? null,
      schema: optionJsonSchema(name),
    };
  });
}

function optionValueText(name: OptionName, loaded: LoadedConfig): string {
  if (optionSpec(name).secret === true || SECRET_NAME_PATTERN.test(name)) return MASK;
  const value: unknown = loaded.config[name];
  return value === undefined || value === null ? '' : String(value);
}

function optionJsonSchema(name: OptionName): Record<string, unknown> {
  const spec = optionSpec(name);
  const schema: Record<string, unknown> = { type: spec.kind };
  if (spec.secret !== true) {
    const parsed = spec.schema.safeParse(undefined);
    if (parsed.success && parsed.data !== undefined) schema['default'] = parsed.data;
  }
  return schema;
}
