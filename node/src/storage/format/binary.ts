/**
 * Little-endian helpers for 64-bit integers held in JS numbers (safe to 2^53), and UUIDs.
 * Writing a 64-bit value as two 32-bit halves avoids BigInt on the hot path.
 */
const TWO_POW_32 = 0x1_0000_0000;

export function writeInt64(buf: Buffer, value: number, offset: number): void {
  const low = value >>> 0;
  const high = Math.floor(value / TWO_POW_32);
  buf.writeUInt32LE(low, offset);
  buf.writeInt32LE(high, offset + 4);
}

export function readInt64(buf: Buffer, offset: number): number {
  const low = buf.readUInt32LE(offset);
  const high = buf.readInt32LE(offset + 4);
  return high * TWO_POW_32 + low;
}

/** Value of a hex digit's char code, or -1. */
function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48; // 0-9
  if (code >= 97 && code <= 102) return code - 87; // a-f
  if (code >= 65 && code <= 70) return code - 55; // A-F
  return -1;
}

function isDashAt(i: number): boolean {
  return i === 8 || i === 13 || i === 18 || i === 23;
}

/** True for the canonical 8-4-4-4-12 hex form (either case). A loop: no regex on the hot path. */
export function isUuid(text: string): boolean {
  if (text.length !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const code = text.charCodeAt(i);
    if (isDashAt(i) ? code !== 45 : hexValue(code) < 0) return false;
  }
  return true;
}

/** Hex digit values by char code (-1 for anything else): one array load per digit. */
const HEX_VALUES = (() => {
  const table = new Int8Array(128).fill(-1);
  for (let c = 0; c < 128; c++) table[c] = hexValue(c);
  return table;
})();

/** Writes the 16 bytes of a canonical UUID string (RFC 4122 byte order); the caller validated it. */
export function writeUuid(buf: Buffer, uuid: string, offset: number): void {
  let out = offset;
  for (let i = 0; i < 36; i += 2) {
    if (i === 8 || i === 13 || i === 18 || i === 23) i++;
    buf[out++] = (HEX_VALUES[uuid.charCodeAt(i) & 127]! << 4) | HEX_VALUES[uuid.charCodeAt(i + 1) & 127]!;
  }
}

/** UTF-8 length of a string; a loop for the common all-ASCII case (no native call). */
export function utf8LengthBytes(text: string): number {
  const n = text.length;
  if (n > 64) return Buffer.byteLength(text, 'utf8');
  for (let i = 0; i < n; i++) if (text.charCodeAt(i) > 127) return Buffer.byteLength(text, 'utf8');
  return n;
}

/** Writes a string as UTF-8 at `offset`; returns the bytes written. Short ASCII strings by a loop. */
export function writeUtf8(buf: Buffer, text: string, offset: number): number {
  const n = text.length;
  if (n > 64) return buf.write(text, offset, 'utf8');
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 127) return buf.write(text, offset, 'utf8');
    buf[offset + i] = c;
  }
  return n;
}

export function readUuid(buf: Buffer, offset: number): string {
  const hex = buf.toString('hex', offset, offset + 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
