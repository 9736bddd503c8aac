/**
 * The operator's narrow port to the Kubernetes API. Controllers, the informer and the leader
 * election see only this interface; client-node-kube-api.ts is its one implementation over
 * @kubernetes/client-node, and unit tests use a fake.
 *
 * Objects are plain JSON (what the apiserver sends), never client-node's generated model
 * classes: those drop fields they do not know and turn timestamps into Dates.
 */

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  [key: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** Where a kind lives in the API: `/apis/<group>/<version>/namespaces/<ns>/<plural>`. */
export interface ResourceType {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

export interface ListResult {
  readonly items: KubeObject[];
  readonly resourceVersion: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchHandle {
  abort(): void;
}

export interface ListOptions {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
}

export interface WatchOptions extends ListOptions {
  readonly resourceVersion: string;
  readonly timeoutSeconds: number;
}

export interface DeleteOptions {
  readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  /** Delete only this incarnation of the object (its uid). */
  readonly uid?: string;
  readonly gracePeriodSeconds?: number;
}

export type PatchType = 'merge' | 'json';

export interface KubeApi {
  get(type: ResourceType, namespace: string | undefined, name: string): Promise<KubeObject | undefined>;
  list(type: ResourceType, options?: ListOptions): Promise<ListResult>;
  /**
   * Streams changes from `resourceVersion`. `onEvent` sees every event (ERROR events carry a
   * metav1.Status); `onDone` is called once, when the stream ends for any reason.
   */
  watch(
    type: ResourceType,
    options: WatchOptions,
    onEvent: (type: WatchEventType, object: KubeObject) => void,
    onDone: (err: unknown) => void,
  ): Promise<WatchHandle>;
  create(type: ResourceType, object: KubeObject): Promise<KubeObject>;
  /** Server-side apply with the operator's field manager; `force` takes over conflicting fields. */
  apply(type: ResourceType, object: KubeObject, options?: { force?: boolean; subresource?: 'status' }): Promise<KubeObject>;
  patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    options?: { patchType?: PatchType; subresource?: 'status' },
  ): Promise<KubeObject>;
  replace(type: ResourceType, object: KubeObject, options?: { subresource?: 'status' }): Promise<KubeObject>;
  /** Resolves to false when the object was already gone. */
  delete(type: ResourceType, namespace: string | undefined, name: string, options?: DeleteOptions): Promise<boolean>;
}

/** An answer of the apiserver other than 2xx, with its metav1.Status reason and message. */
export class KubeApiError extends Error {
  readonly code = 'EDBOP_KUBE_API';
  readonly statusCode: number;
  readonly reason: string;

  constructor(statusCode: number, reason: string, message: string) {
    super(message);
    this.name = 'KubeApiError';
    this.statusCode = statusCode;
    this.reason = reason;
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 404;
}

export function isConflict(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 409;
}

export function isAlreadyExists(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 409 && err.reason === 'AlreadyExists';
}

export function isGone(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 410;
}

/** A namespace being deleted refuses new objects: nothing to retry. */
export function isNamespaceTerminating(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 403 && /being terminated/.test(err.message);
}

export function objectKey(object: { metadata: { namespace?: string; name?: string } }): string {
  const name = object.metadata.name ?? '';
  return object.metadata.namespace === undefined ? name : `${object.metadata.namespace}/${name}`;
}

export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export function resourcePath(type: ResourceType, namespace: string | undefined, name?: string): string {
  const base = type.group === '' ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  const scoped = type.namespaced && namespace !== undefined ? `${base}/namespaces/${encodeURIComponent(namespace)}` : base;
  return name === undefined ? `${scoped}/${type.plural}` : `${scoped}/${type.plural}/${encodeURIComponent(name)}`;
}
