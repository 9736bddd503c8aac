/**
 * Where chunk files live: a directory on disk, or memory (--mem-db). The registry asks this
 * port for files by name and never builds paths itself.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { MemoryBlockFile, NodeBlockFile, syncDirectory, type BlockFile } from '../../platform/block-file.js';
import { openDirect, type DirectFile } from '../../platform/direct-file.js';

export interface ChunkStorage {
  readonly description: string;
  list(): string[];
  open(name: string, writable: boolean): BlockFile;
  create(name: string): BlockFile;
  /**
   * A second handle on a file just made with `create`, for direct writes of aligned blocks
   * (see direct-file.ts); undefined where they are not possible (memory, some filesystems).
   */
  openDirect(name: string): DirectFile | undefined;
  remove(name: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  syncDirectory(): Promise<void>;
}

export class DirectoryChunkStorage implements ChunkStorage {
  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
  }
  get description(): string { return this.dir; }
  list(): string[] { return fs.readdirSync(this.dir); }
  open(name: string, writable: boolean): BlockFile { return NodeBlockFile.openExisting(path.join(this.dir, name), writable); }
  create(name: string): BlockFile { return NodeBlockFile.create(path.join(this.dir, name)); }
  openDirect(name: string): DirectFile | undefined { return openDirect(path.join(this.dir, name)); }
  async remove(name: string): Promise<void> { await fsp.rm(path.join(this.dir, name), { force: true }); }
  async rename(from: string, to: string): Promise<void> { await fsp.rename(path.join(this.dir, from), path.join(this.dir, to)); }
  syncDirectory(): Promise<void> { return syncDirectory(this.dir); }
}

export class MemoryChunkStorage implements ChunkStorage {
  private readonly files = new Map<string, MemoryBlockFile>();
  get description(): string { return '(memory)'; }
  list(): string[] { return [...this.files.keys()]; }
  open(name: string): BlockFile {
    const f = this.files.get(name);
    if (!f) throw Object.assign(new Error(`no such file ${name}`), { code: 'ENOENT' });
    return f;
  }
  create(name: string): BlockFile {
    if (this.files.has(name)) throw Object.assign(new Error(`file exists ${name}`), { code: 'EEXIST' });
    const f = new MemoryBlockFile(name);
    this.files.set(name, f);
    return f;
  }
  openDirect(): DirectFile | undefined { return undefined; }
  async remove(name: string): Promise<void> { this.files.delete(name); }
  async rename(from: string, to: string): Promise<void> {
    const f = this.files.get(from);
    if (f) { this.files.delete(from); this.files.set(to, f); }
  }
  async syncDirectory(): Promise<void> {}
}
