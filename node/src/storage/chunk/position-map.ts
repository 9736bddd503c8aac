/**
 * The position map of a scavenged chunk (12-byte entries `u32 physical | i64 logical`, sorted by
 * both), searched in the chunk file rather than held in memory: memory stays small whatever the
 * log size. Every PAGE_ENTRIES-th entry is kept in memory (16 bytes per page) to find the page
 * of an offset; the entries of the page last used are kept too, so sequential scans read each
 * page once. A lookup reads at most one page (1.5 KiB, from the page cache).
 */
import type { BlockFile } from '../../platform/block-file.js';
import { readInt64 } from '../format/binary.js';

export const POSMAP_ENTRY_BYTES = 12;
const PAGE_ENTRIES = 128;
/** Pages whose first entries are sampled per read when the map is opened (192 KiB). */
const SAMPLE_READ_PAGES = 128;

export class PositionMap {
  /** First physical and logical offset of each page. */
  private readonly pageFirstPhysical: Float64Array;
  private readonly pageFirstLogical: Float64Array;
  private loadedPage = -1;
  private readonly physical = new Float64Array(PAGE_ENTRIES);
  private readonly logical = new Float64Array(PAGE_ENTRIES);

  /** `mapOffset`: file offset of the first entry. Reads the map once to sample it. */
  constructor(private readonly file: BlockFile, private readonly mapOffset: number, readonly count: number) {
    const pages = Math.ceil(count / PAGE_ENTRIES);
    this.pageFirstPhysical = new Float64Array(pages);
    this.pageFirstLogical = new Float64Array(pages);
    // Sampled in reads of SAMPLE_READ_PAGES pages: one read per page made opening a scavenged
    // chunk (a swap, a start-up) cost a thousand reads per 100k entries.
    for (let page = 0; page < pages; page += SAMPLE_READ_PAGES) {
      const first = page * PAGE_ENTRIES;
      const n = Math.min(SAMPLE_READ_PAGES * PAGE_ENTRIES, count - first);
      const bytes = this.file.readSync(this.mapOffset + first * POSMAP_ENTRY_BYTES, n * POSMAP_ENTRY_BYTES);
      for (let i = 0; i * PAGE_ENTRIES < n; i++) {
        const at = i * PAGE_ENTRIES * POSMAP_ENTRY_BYTES;
        this.pageFirstPhysical[page + i] = bytes.readUInt32LE(at);
        this.pageFirstLogical[page + i] = readInt64(bytes, at + 4);
      }
    }
  }

  physicalAt(i: number): number {
    this.load(Math.floor(i / PAGE_ENTRIES));
    return this.physical[i % PAGE_ENTRIES]!;
  }

  logicalAt(i: number): number {
    this.load(Math.floor(i / PAGE_ENTRIES));
    return this.logical[i % PAGE_ENTRIES]!;
  }

  /** Index of the first entry whose logical offset is >= `logicalOffset` (count if none). */
  lowerBoundLogical(logicalOffset: number): number {
    return this.lowerBound(this.pageFirstLogical, this.logical, logicalOffset);
  }

  /** Index of the first entry whose physical offset is >= `physicalOffset` (count if none). */
  lowerBoundPhysical(physicalOffset: number): number {
    return this.lowerBound(this.pageFirstPhysical, this.physical, physicalOffset);
  }

  private lowerBound(pageFirst: Float64Array, entries: Float64Array, value: number): number {
    // First page whose first entry is >= value: the answer is in the page before it, or is it.
    let lo = 0;
    let hi = pageFirst.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (pageFirst[mid]! < value) lo = mid + 1; else hi = mid;
    }
    if (lo === 0) return 0;
    const page = lo - 1;
    const n = this.load(page);
    let a = 0;
    let b = n;
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (entries[mid]! < value) a = mid + 1; else b = mid;
    }
    return page * PAGE_ENTRIES + a;
  }

  /** Loads a page's entries; returns how many it has. */
  private load(page: number): number {
    const first = page * PAGE_ENTRIES;
    const n = Math.min(PAGE_ENTRIES, this.count - first);
    if (page === this.loadedPage) return n;
    const bytes = this.file.readSync(this.mapOffset + first * POSMAP_ENTRY_BYTES, n * POSMAP_ENTRY_BYTES);
    for (let i = 0; i < n; i++) {
      this.physical[i] = bytes.readUInt32LE(i * POSMAP_ENTRY_BYTES);
      this.logical[i] = readInt64(bytes, i * POSMAP_ENTRY_BYTES + 4);
    }
    this.loadedPage = page;
    return n;
  }
}
