/**
 * Certificate name matching (pure), with the rules EventStoreDB applies to node certificates:
 *
 * - `certificateNameMatches(certName, name)`: RFC 6125 host-name matching of one name taken from
 *   a certificate (a DNS SAN or a common name) against a name: case-insensitive, label by label;
 *   a wildcard only as the whole first label (`*.example.com`, never `f*.example.com`), covering
 *   exactly one label, and only in a name of at least three labels. An IP address on either side
 *   is compared exactly.
 * - `commonNameMatchesReserved(commonName, reserved)`: whether a peer's certificate common name
 *   carries the reserved node common name. A wildcard common name must equal the reserved name
 *   exactly (`*.nodes.test` matches `*.nodes.test` only); otherwise the reserved name is matched
 *   as a pattern against the common name (reserved `*.nodes.test` accepts `node-1.nodes.test`,
 *   reserved `node-1.nodes.test` accepts only itself).
 */
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

const DNS_LABEL = /^[0-9a-z-]+$/i;

function asciiLabels(name: string): string[] | undefined {
  const labels = name.split('.');
  if (labels.some((label) => label === '')) return undefined;
  const converted = labels.map((label) => (/^[\x00-\x7f]*$/.test(label) ? label : domainToASCII(label)));
  return converted.some((label) => label === '') ? undefined : converted.map((l) => l.toLowerCase());
}

export function isWildcardName(name: string): boolean {
  return name.startsWith('*.') && certificateNameMatches(name, `a${name.slice(1)}`);
}

/** RFC 6125 match of `certName` (from a certificate, may be a wildcard) against `name`. */
export function certificateNameMatches(certName: string, name: string): boolean {
  if (certName === '' || name === '') return false;
  if (isIP(certName) !== 0 || isIP(name) !== 0) return certName.toLowerCase() === name.toLowerCase();
  const certLabels = asciiLabels(certName);
  const nameLabels = asciiLabels(name);
  if (certLabels === undefined || nameLabels === undefined) return false;
  if (certLabels.length !== nameLabels.length) return false;
  const [first, ...rest] = certLabels;
  if (first === undefined) return false;
  if (!(first === '*' || DNS_LABEL.test(first)) || !rest.every((l) => DNS_LABEL.test(l))) return false;
  if (!nameLabels.every((l) => DNS_LABEL.test(l))) return false;
  if (first !== '*') return certLabels.every((label, i) => label === nameLabels[i]);
  if (certLabels.length <= 2) return false;
  return rest.every((label, i) => label === nameLabels[i + 1]);
}

/** Whether a certificate with this common name carries the reserved node common name. */
export function commonNameMatchesReserved(commonName: string | undefined, reserved: string): boolean {
  if (commonName === undefined || commonName === '') return false;
  if (isWildcardName(commonName)) return commonName.toLowerCase() === reserved.toLowerCase();
  return certificateNameMatches(reserved, commonName);
}

/** A certificate's names as an RFC 6125 client sees them: SANs when there are any, else the CN. */
export function certificateCoversHost(
  names: { readonly dns: readonly string[]; readonly ip: readonly string[]; readonly commonName?: string | undefined },
  host: string,
): boolean {
  if (isIP(host) !== 0) {
    return names.ip.some((ip) => sameIp(ip, host));
  }
  if (names.dns.length > 0 || names.ip.length > 0) return names.dns.some((dns) => certificateNameMatches(dns, host));
  return names.commonName !== undefined && certificateNameMatches(names.commonName, host);
}

function sameIp(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase() || expandIpv6(a) === expandIpv6(b);
}

/** `::1` and `0:0:0:0:0:0:0:1` compare equal; IPv4 addresses come back unchanged. */
function expandIpv6(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  const [head = '', tail = ''] = ip.toLowerCase().split('::');
  const headParts = head === '' ? [] : head.split(':');
  const tailParts = ip.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  const missing = 8 - headParts.length - tailParts.length;
  return [...headParts, ...Array<string>(Math.max(0, missing)).fill('0'), ...tailParts]
    .map((part) => part.replace(/^0+(?=.)/, ''))
    .join(':');
}
