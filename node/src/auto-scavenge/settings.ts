/**
 * Whether auto-scavenge runs on this node, decided once at start from the configuration and the
 * licence (pure: the caller passes the time):
 *
 * - `--auto-scavenge-enabled false` (YAML `AutoScavenge: {Enabled: false}`): off;
 * - no licence key, an invalid or expired one, or one without the AUTO_SCAVENGE entitlement:
 *   off, with the reason logged (an error for a key that was given but refused);
 * - licensed and not turned off, but with --dev or --mem-db: the node refuses to start;
 * - otherwise on.
 */
import {
  AUTO_SCAVENGE_ENTITLEMENT,
  hasEntitlement,
  LicensePublicKeyError,
  parseLicensePublicKey,
  SHIPPED_LICENSE_PUBLIC_KEY,
  verifyLicenseKey,
  type License,
} from '../license/license.js';

export interface AutoScavengeSettingsInput {
  readonly autoScavengeEnabled: boolean;
  readonly licenseKey: string;
  readonly licensePublicKey: string;
  readonly dev: boolean;
  readonly memDb: boolean;
  readonly nowMs: number;
}

export type AutoScavengeSettings =
  | { readonly kind: 'enabled'; readonly license: License }
  | { readonly kind: 'disabled'; readonly level: 'info' | 'warn' | 'error'; readonly reason: string; readonly license?: License }
  /** A startup error: the message says what to change. */
  | { readonly kind: 'refused'; readonly message: string };

export function resolveAutoScavengeSettings(input: AutoScavengeSettingsInput): AutoScavengeSettings {
  let publicKey;
  try {
    publicKey = parseLicensePublicKey(input.licensePublicKey === '' ? SHIPPED_LICENSE_PUBLIC_KEY : input.licensePublicKey);
  } catch (err: unknown) {
    if (!(err instanceof LicensePublicKeyError)) throw err;
    return { kind: 'refused', message: `--license-public-key: ${err.message}` };
  }
  if (input.licenseKey === '') {
    return { kind: 'disabled', level: 'info', reason: 'auto-scavenge is not enabled: no licence key (--license-key)' };
  }
  const check = verifyLicenseKey(input.licenseKey, publicKey, input.nowMs);
  if (check.kind === 'invalid') {
    return { kind: 'disabled', level: 'error', reason: `licence key refused: ${check.reason}; auto-scavenge is not enabled` };
  }
  if (check.kind === 'expired') {
    return {
      kind: 'disabled', level: 'error', license: check.license,
      reason: `licence key expired on ${check.license.expiresAt}; auto-scavenge is not enabled`,
    };
  }
  const { license } = check;
  if (!hasEntitlement(license, AUTO_SCAVENGE_ENTITLEMENT)) {
    return { kind: 'disabled', level: 'warn', license, reason: `the licence does not include ${AUTO_SCAVENGE_ENTITLEMENT}; auto-scavenge is not enabled` };
  }
  if (!input.autoScavengeEnabled) {
    return { kind: 'disabled', level: 'info', license, reason: 'auto-scavenge is disabled by configuration (AutoScavenge Enabled: false)' };
  }
  const incompatible = input.dev ? '--dev' : input.memDb ? '--mem-db' : undefined;
  if (incompatible !== undefined) {
    return {
      kind: 'refused',
      message: `auto-scavenge cannot run with ${incompatible}; turn it off with --auto-scavenge-enabled false ` +
        `(YAML AutoScavenge: {Enabled: false}, SERVICE_AUTO_SCAVENGE_ENABLED=false) or drop ${incompatible}`,
    };
  }
  return { kind: 'enabled', license };
}
