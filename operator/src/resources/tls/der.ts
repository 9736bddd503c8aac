/**
 * The few ASN.1 DER encodings an X.509 certificate needs (X.690): definite lengths, minimal
 * two's-complement integers, object identifiers, strings, times, tagged values.
 */

function encodeLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), encodeLength(content.length), content]);
}

export function sequence(...items: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(items));
}

export function set(...items: Buffer[]): Buffer {
  return tlv(0x31, Buffer.concat(items));
}

/** A non-negative integer given as big-endian bytes (a serial number) or a small number. */
export function integer(value: number | Buffer): Buffer {
  let bytes = typeof value === 'number' ? numberBytes(value) : value;
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0 && ((bytes[start + 1] ?? 0) & 0x80) === 0) start++;
  bytes = bytes.subarray(start);
  if (((bytes[0] ?? 0) & 0x80) !== 0) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return tlv(0x02, bytes);
}

function numberBytes(value: number): Buffer {
  const hex = value.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, 'hex');
}

export function boolean(value: boolean): Buffer {
  return tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
}

export function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const first = parts[0] ?? 0;
  const second = parts[1] ?? 0;
  const bytes: number[] = [first * 40 + second];
  for (const part of parts.slice(2)) {
    const chunk: number[] = [part & 0x7f];
    for (let rest = Math.floor(part / 128); rest > 0; rest = Math.floor(rest / 128)) chunk.unshift((rest & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

export function utf8String(text: string): Buffer {
  return tlv(0x0c, Buffer.from(text, 'utf8'));
}

export function octetString(content: Buffer): Buffer {
  return tlv(0x04, content);
}

/** A BIT STRING with no unused bits. */
export function bitString(content: Buffer): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([0]), content]));
}

/** UTCTime before 2050, GeneralizedTime from 2050 on (RFC 5280 4.1.2.5). */
export function time(date: Date): Buffer {
  const iso = date.toISOString();
  const digits = iso.slice(0, 19).replace(/[-:T]/g, '');
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${digits}Z`));
}

/** `[n] EXPLICIT` (constructed, context-specific). */
export function explicit(tagNumber: number, content: Buffer): Buffer {
  return tlv(0xa0 | tagNumber, content);
}

/** `[n] IMPLICIT` primitive (context-specific), e.g. a SAN dNSName. */
export function implicitPrimitive(tagNumber: number, content: Buffer): Buffer {
  return tlv(0x80 | tagNumber, content);
}
