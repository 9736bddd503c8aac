/**
 * One informer per watched namespace (or one for all namespaces), seen as one cache.
 */
import type { Informer, InformerHandler } from './informer.js';
import type { KubeObject } from './kube-api.js';

export class InformerSet {
  readonly #informers: readonly Informer[];

  constructor(informers: readonly Informer[]) {
    this.#informers = informers;
  }

  on(handler: InformerHandler): void {
    for (const informer of this.#informers) informer.on(handler);
  }

  start(): void {
    for (const informer of this.#informers) informer.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.#informers.map((informer) => informer.stop()));
  }

  async waitForSync(): Promise<void> {
    await Promise.all(this.#informers.map((informer) => informer.waitForSync()));
  }

  hasSynced(): boolean {
    return this.#informers.every((informer) => informer.hasSynced());
  }

  /** The oldest last contact of any informer with the apiserver. */
  lastContactAtMs(): number {
    return Math.min(...this.#informers.map((informer) => informer.lastContactAtMs()));
  }

  get(key: string): KubeObject | undefined {
    for (const informer of this.#informers) {
      const object = informer.get(key);
      if (object !== undefined) return object;
    }
    return undefined;
  }

  list(filter?: (object: KubeObject) => boolean): KubeObject[] {
    return this.#informers.flatMap((informer) => informer.list(filter));
  }
}
