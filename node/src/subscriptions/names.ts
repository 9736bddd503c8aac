/**
 * Names of the system streams and event types persistent subscriptions use, as EventStoreDB
 * names them (PersistentSubscriptionService, ...CheckpointWriter, ...MessageParker).
 */

/** Every group's settings, in one event (the latest wins). */
export const CONFIG_STREAM = '$persistentSubscriptionConfig';
export const CONFIG_EVENT_TYPE = '$PersistentConfig';
/** Older name of the config event type, still read. */
export const LEGACY_CONFIG_EVENT_TYPE = 'PersistentConfig1';
export const CHECKPOINT_EVENT_TYPE = '$SubscriptionCheckpoint';
export const LEGACY_CHECKPOINT_EVENT_TYPE = 'SubscriptionCheckpoint';
/** A link event: its data is `{eventNumber}@{stream}`. */
export const LINK_EVENT_TYPE = '$>';
/** Metadata key an event's correlation id is read from (PinnedByCorrelation). */
export const CORRELATION_ID_KEY = '$correlationId';
/** Persistent subscriptions to `$all` exist over gRPC only in the original; not over HTTP. */
export const ALL_STREAM = '$all';

/** `{stream}::{group}`: the group's identity in the system stream names and in logs. */
export function groupKey(stream: string, group: string): string {
  return `${stream}::${group}`;
}

export function checkpointStreamOf(stream: string, group: string): string {
  return `$persistentsubscription-${groupKey(stream, group)}-checkpoint`;
}

export function parkedStreamOf(stream: string, group: string): string {
  return `$persistentsubscription-${groupKey(stream, group)}-parked`;
}

/** Reads `{eventNumber}@{stream}`; undefined when the text is not a link. */
export function parseLinkData(text: string): { stream: string; eventNumber: number } | undefined {
  const at = text.indexOf('@');
  if (at <= 0) return undefined;
  const numberText = text.slice(0, at);
  if (!/^\d+$/.test(numberText)) return undefined;
  const eventNumber = Number(numberText);
  if (!Number.isSafeInteger(eventNumber)) return undefined;
  return { eventNumber, stream: text.slice(at + 1) };
}
