/**
 * Large scratch buffers reused from chunk to chunk (chunk verification, scavenge reads and
 * writes). Allocating a fresh multi-MiB buffer for every chunk made glibc keep the freed memory
 * (its mmap threshold rises after the first large free), which showed as tens of MB of resident
 * memory that were never given back. A few buffers of each size up to 4 MiB are kept until
 * `dropScratch`; bigger ones (chunk verification's 8 MiB) serve one chunk and are let go.
 */
const KEPT_PER_SIZE_MAX = 4;
const KEPT_SIZE_BYTES_MAX = 4 * 1024 * 1024;
const free = new Map<number, Buffer[]>();

/** A buffer of exactly `sizeBytes` (contents undefined). */
export function takeScratch(sizeBytes: number): Buffer {
  return free.get(sizeBytes)?.pop() ?? Buffer.allocUnsafeSlow(sizeBytes);
}

/** Returns a buffer from `takeScratch`; the caller must not touch it afterwards. */
export function giveBackScratch(buf: Buffer): void {
  if (buf.length > KEPT_SIZE_BYTES_MAX) return;
  let list = free.get(buf.length);
  if (!list) {
    list = [];
    free.set(buf.length, list);
  }
  if (list.length < KEPT_PER_SIZE_MAX && !list.includes(buf)) list.push(buf);
}

/** Lets the kept buffers go (end of a scavenge). */
export function dropScratch(): void {
  free.clear();
}
