/**
 * An in-memory KubeApi for unit tests of the runtime and the controllers: resourceVersions,
 * generations (bumped on spec changes), the status subresource, server-side apply approximated
 * as a merge, JSON merge patches, conflicts on stale replaces, watches with injectable closes,
 * failures and expired versions (410). Not a Kubernetes: no admission, no garbage collection.
 */
import { randomUUID } from 'node:crypto';
import {
  KubeApiError,
  objectKey,
  type DeleteOptions,
  type KubeApi,
  type KubeObject,
  type ListOptions,
  type ListResult,
  type PatchType,
  type ResourceType,
  type WatchEventType,
  type WatchHandle,
  type WatchOptions,
} from './kube-api.js';

interface Watcher {
  readonly type: ResourceType;
  readonly options: WatchOptions;
  readonly onEvent: (type: WatchEventType, object: KubeObject) => void;
  readonly onDone: (err: unknown) => void;
  closed: boolean;
}

type Json = Record<string, unknown>;

function typeKey(type: ResourceType): string {
  return `${type.group}/${type.plural}`;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const out: Json = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

function matchesSelector(object: KubeObject, selector: string | undefined): boolean {
  if (selector === undefined || selector === '') return true;
  const labels = object.metadata.labels ?? {};
  return selector.split(',').every((term) => {
    const [key, value] = term.split('=');
    return key !== undefined && labels[key] === value;
  });
}

export class FakeKubeApi implements KubeApi {
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #watchers: Watcher[] = [];
  /** Every change, so a watch from an older version replays what it missed, as etcd does. */
  readonly #history: { version: number; typeKey: string; event: WatchEventType; object: KubeObject }[] = [];
  #version = 1;
  /** Watches from a version at or below this answer 410 Gone. */
  #expiredBelow = 0;
  #failWatches = 0;
  /** Every write, in order, for assertions. */
  readonly writes: { verb: string; kind: string; key: string; subresource?: string }[] = [];
  /** Thrown by the next call of the named verb, once. */
  readonly failNext = new Map<string, Error>();

  currentVersion(): number {
    return this.#version;
  }

  /** Puts an object in the store as if someone else had created it. */
  seed(type: ResourceType, object: KubeObject): KubeObject {
    return this.#store(type, this.#stamp(clone(object), undefined), 'ADDED');
  }

  objects(type: ResourceType): KubeObject[] {
    return [...(this.#objects.get(typeKey(type))?.values() ?? [])].map(clone);
  }

  /** Ends every open watch as a server would at its timeout. */
  closeWatches(err?: unknown): void {
    for (const watcher of this.#watchers.splice(0)) {
      watcher.closed = true;
      watcher.onDone(err);
    }
  }

  /** Makes every version seen so far too old to watch from (410 Gone), as after etcd compaction. */
  expireVersions(): void {
    this.#expiredBelow = this.#version;
  }

  /** The next `count` watch requests fail. */
  failWatches(count: number): void {
    this.#failWatches = count;
  }

  openWatches(): number {
    return this.#watchers.filter((watcher) => !watcher.closed).length;
  }

  async get(type: ResourceType, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    this.#maybeFail('get');
    const object = this.#bucket(type).get(namespace === undefined ? name : `${namespace}/${name}`);
    return object === undefined ? undefined : clone(object);
  }

  async list(type: ResourceType, options: ListOptions = {}): Promise<ListResult> {
    this.#maybeFail('list');
    const items = [...this.#bucket(type).values()]
      .filter((object) => options.namespace === undefined || object.metadata.namespace === options.namespace)
      .filter((object) => matchesSelector(object, options.labelSelector))
      .map(clone);
    return { items, resourceVersion: String(this.#version) };
  }

  async watch(
    type: ResourceType,
    options: WatchOptions,
    onEvent: (type: WatchEventType, object: KubeObject) => void,
    onDone: (err: unknown) => void,
  ): Promise<WatchHandle> {
    if (this.#failWatches > 0) {
      this.#failWatches--;
      throw new KubeApiError(500, 'InternalError', 'watch refused by the fake');
    }
    const watcher: Watcher = { type, options, onEvent, onDone, closed: false };
    if (Number(options.resourceVersion) < this.#expiredBelow) {
      queueMicrotask(() => {
        onEvent('ERROR', { apiVersion: 'v1', kind: 'Status', metadata: {}, code: 410, reason: 'Expired' });
        onDone(undefined);
      });
      return { abort: () => undefined };
    }
    this.#watchers.push(watcher);
    const missed = this.#history.filter(
      (entry) => entry.typeKey === typeKey(type) && entry.version > Number(options.resourceVersion),
    );
    for (const entry of missed) this.#deliver(watcher, entry.event, entry.object);
    return {
      abort: () => {
        if (watcher.closed) return;
        watcher.closed = true;
        this.#watchers.splice(this.#watchers.indexOf(watcher), 1);
        onDone(undefined);
      },
    };
  }

  async create(type: ResourceType, object: KubeObject): Promise<KubeObject> {
    this.#maybeFail('create');
    const key = this.#keyOf(object);
    if (this.#bucket(type).has(key)) throw new KubeApiError(409, 'AlreadyExists', `${type.kind} ${key} already exists`);
    this.writes.push({ verb: 'create', kind: type.kind, key });
    return clone(this.#store(type, this.#stamp(clone(object), undefined), 'ADDED'));
  }

  async apply(type: ResourceType, object: KubeObject, options: { force?: boolean; subresource?: 'status' } = {}): Promise<KubeObject> {
    this.#maybeFail('apply');
    const key = this.#keyOf(object);
    const existing = this.#bucket(type).get(key);
    this.writes.push({ verb: 'apply', kind: type.kind, key, ...(options.subresource ? { subresource: options.subresource } : {}) });
    if (existing === undefined) {
      if (options.subresource === 'status') throw new KubeApiError(404, 'NotFound', `${type.kind} ${key} not found`);
      return clone(this.#store(type, this.#stamp(clone(object), undefined), 'ADDED'));
    }
    const wanted = object.metadata.resourceVersion;
    if (wanted !== undefined && wanted !== existing.metadata.resourceVersion) {
      throw new KubeApiError(409, 'Conflict', `${type.kind} ${key}: the object has been modified`);
    }
    let next: KubeObject;
    if (options.subresource === 'status') {
      next = { ...clone(existing), status: clone(object['status']) };
    } else {
      const { status: _ignored, ...rest } = clone(object);
      next = mergePatch(existing, { ...rest, metadata: { ...rest.metadata, resourceVersion: undefined } }) as KubeObject;
    }
    return clone(this.#update(type, existing, next));
  }

  async patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    options: { patchType?: PatchType; subresource?: 'status' } = {},
  ): Promise<KubeObject> {
    this.#maybeFail('patch');
    if (options.patchType === 'json') throw new Error('the fake supports merge patches only');
    const key = namespace === undefined ? name : `${namespace}/${name}`;
    const existing = this.#bucket(type).get(key);
    if (existing === undefined) throw new KubeApiError(404, 'NotFound', `${type.kind} ${key} not found`);
    this.writes.push({ verb: 'patch', kind: type.kind, key, ...(options.subresource ? { subresource: options.subresource } : {}) });
    const wanted = (patch as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (wanted !== undefined && wanted !== existing.metadata.resourceVersion) {
      throw new KubeApiError(409, 'Conflict', `${type.kind} ${key}: the object has been modified`);
    }
    const merged = mergePatch(existing, patch) as KubeObject;
    const next = options.subresource === 'status' ? { ...clone(existing), status: merged['status'] } : { ...merged, status: existing['status'] };
    return clone(this.#update(type, existing, next as KubeObject));
  }

  async replace(type: ResourceType, object: KubeObject, options: { subresource?: 'status' } = {}): Promise<KubeObject> {
    this.#maybeFail('replace');
    const key = this.#keyOf(object);
    const existing = this.#bucket(type).get(key);
    if (existing === undefined) throw new KubeApiError(404, 'NotFound', `${type.kind} ${key} not found`);
    if (object.metadata.resourceVersion !== existing.metadata.resourceVersion) {
      throw new KubeApiError(409, 'Conflict', `${type.kind} ${key}: the object has been modified`);
    }
    this.writes.push({ verb: 'replace', kind: type.kind, key, ...(options.subresource ? { subresource: options.subresource } : {}) });
    const next = options.subresource === 'status' ? { ...clone(existing), status: clone(object['status']) } : { ...clone(object), status: existing['status'] };
    return clone(this.#update(type, existing, next));
  }

  async delete(type: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions = {}): Promise<boolean> {
    this.#maybeFail('delete');
    const key = namespace === undefined ? name : `${namespace}/${name}`;
    const existing = this.#bucket(type).get(key);
    if (existing === undefined) return false;
    if (options.uid !== undefined && existing.metadata.uid !== options.uid) {
      throw new KubeApiError(409, 'Conflict', `${type.kind} ${key}: uid precondition failed`);
    }
    this.writes.push({ verb: 'delete', kind: type.kind, key });
    if ((existing.metadata.finalizers ?? []).length > 0) {
      const next = clone(existing);
      next.metadata.deletionTimestamp ??= new Date(0).toISOString();
      this.#update(type, existing, next);
      return true;
    }
    this.#bucket(type).delete(key);
    this.#version++;
    this.#notify(type, 'DELETED', { ...clone(existing), metadata: { ...existing.metadata, resourceVersion: String(this.#version) } });
    return true;
  }

  #maybeFail(verb: string): void {
    const err = this.failNext.get(verb);
    if (err === undefined) return;
    this.failNext.delete(verb);
    throw err;
  }

  #bucket(type: ResourceType): Map<string, KubeObject> {
    let bucket = this.#objects.get(typeKey(type));
    if (bucket === undefined) {
      bucket = new Map();
      this.#objects.set(typeKey(type), bucket);
    }
    return bucket;
  }

  #keyOf(object: KubeObject): string {
    if (object.metadata.name === undefined) throw new Error('the fake needs metadata.name');
    return objectKey(object);
  }

  #stamp(object: KubeObject, previous: KubeObject | undefined): KubeObject {
    this.#version++;
    object.metadata.resourceVersion = String(this.#version);
    object.metadata.uid ??= previous?.metadata.uid ?? randomUUID();
    object.metadata.creationTimestamp ??= previous?.metadata.creationTimestamp ?? new Date(0).toISOString();
    const specChanged = previous === undefined || JSON.stringify(previous['spec']) !== JSON.stringify(object['spec']);
    object.metadata.generation = (previous?.metadata.generation ?? 0) + (specChanged ? 1 : 0);
    return object;
  }

  #update(type: ResourceType, existing: KubeObject, next: KubeObject): KubeObject {
    if (existing.metadata.deletionTimestamp !== undefined && (next.metadata.finalizers ?? []).length === 0) {
      this.#bucket(type).delete(this.#keyOf(existing));
      this.#version++;
      this.#notify(type, 'DELETED', next);
      return next;
    }
    return this.#store(type, this.#stamp(next, existing), 'MODIFIED');
  }

  #store(type: ResourceType, object: KubeObject, event: WatchEventType): KubeObject {
    this.#bucket(type).set(this.#keyOf(object), object);
    this.#notify(type, event, object);
    return object;
  }

  #notify(type: ResourceType, event: WatchEventType, object: KubeObject): void {
    this.#history.push({ version: this.#version, typeKey: typeKey(type), event, object: clone(object) });
    for (const watcher of this.#watchers) {
      if (typeKey(watcher.type) === typeKey(type)) this.#deliver(watcher, event, object);
    }
  }

  #deliver(watcher: Watcher, event: WatchEventType, object: KubeObject): void {
    const { namespace, labelSelector } = watcher.options;
    if (watcher.closed) return;
    if (namespace !== undefined && object.metadata.namespace !== namespace) return;
    if (!matchesSelector(object, labelSelector)) return;
    const copy = clone(object);
    queueMicrotask(() => {
      if (!watcher.closed) watcher.onEvent(event, copy);
    });
  }
}
