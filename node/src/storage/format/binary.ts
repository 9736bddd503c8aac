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

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(text: string): boolean {
  return UUID_RE.test(text);
}

/** Writes the 16 bytes of a canonical UUID string (RFC 4122 byte order). */
export function writeUuid(buf: Buffer, uuid: string, offset: number): void {
  const hex = uuid.replace(/-/g, '');
  buf.write(hex, offset, 16, 'hex');
}

export function readUuid(buf: Buffer, offset: number): string {
  const hex = buf.toString('hex', offset, offset + 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
