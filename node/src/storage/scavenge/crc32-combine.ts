/**
 * crc32_combine (as zlib's): the crc32 of A followed by B from crc32(A), crc32(B) and B's
 * length, in about 1 µs, without touching the bytes. Lets a chunk rewrite take the crc32 of the
 * data it keeps from the crcs of the kept runs it computed anyway to verify the source chunk,
 * instead of a second crc pass over the output.
 */
const POLY = 0xedb88320;

/** a * b mod P (reflected bit order, as zlib's multmodp). */
function multmodp(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) mod P. */
const X2N = new Uint32Array(32);
{
  let p = 0x40000000; // x^1
  X2N[0] = p;
  for (let n = 1; n < 32; n++) X2N[n] = p = multmodp(p, p);
}

/** x^(n * 2^k) mod P. */
function x2nmodp(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multmodp(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** crc32 of A||B from crc32(A) = `crcA`, crc32(B) = `crcB` and B's length in bytes. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB <= 0) return crcA >>> 0;
  return (multmodp(x2nmodp(lengthB, 3), crcA >>> 0) ^ crcB) >>> 0;
}
