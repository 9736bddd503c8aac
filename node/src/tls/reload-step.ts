/**
 * The TLS part of a configuration reload (SIGHUP, POST /admin/reloadconfig): re-reads the
 * certificate, key and trusted-roots folder named by the newly loaded options (the files are read
 * again even when the options did not change: renewed certificates are usually replaced in
 * place), checks them all (loadTlsMaterial), and only then, once every reload step has prepared,
 * swaps them into the TlsState. A refusal (missing file, mismatched key, expired certificate,
 * untrusted issuer, common name without the reserved one) fails the whole reload and changes
 * nothing: the old certificates keep being served.
 */
import type { NodeConfig, OptionName } from '../config/schema.js';
import type { ReloadStep } from '../reload/reload.js';
import { loadTlsMaterial, type TlsFiles, type TlsSources } from './material.js';
import type { TlsState } from './tls-state.js';

/** Options a secure node applies on reload; with --insecure they need a restart. */
export const TLS_LIVE_OPTIONS: readonly OptionName[] = [
  'certificateFile',
  'certificatePrivateKeyFile',
  'trustedRootCertificatesPath',
  'certificateReservedNodeCommonName',
];

export function tlsSourcesOf(config: NodeConfig): TlsSources {
  return {
    certificateFile: config.certificateFile,
    certificatePrivateKeyFile: config.certificatePrivateKeyFile,
    trustedRootCertificatesPath: config.trustedRootCertificatesPath,
    certificateReservedNodeCommonName: config.certificateReservedNodeCommonName,
  };
}

/** The host other nodes reach this node by, for the certificate check ('' when unknown). */
export function advertisedHostOf(config: NodeConfig): string {
  if (config.nodeHostAdvertiseAs !== '') return config.nodeHostAdvertiseAs;
  return config.nodeIp === '0.0.0.0' || config.nodeIp === '::' ? '' : config.nodeIp;
}

export function createTlsReloadStep(state: TlsState, options: { files?: TlsFiles; nowMs?: () => number } = {}): ReloadStep {
  return (loaded) => {
    // Switching TLS off is a change of --insecure, which the reloader reports as needing a restart.
    if (loaded.config.insecure || loaded.config.dev) return undefined;
    const material = loadTlsMaterial(tlsSourcesOf(loaded.config), {
      ...(options.files === undefined ? {} : { files: options.files }),
      ...(options.nowMs === undefined ? {} : { nowMs: options.nowMs() }),
      advertisedHost: advertisedHostOf(loaded.config),
    });
    return () => state.replace(material);
  };
}
