/**
 * Checkpoint tags: where a projection is in its sources, in EventStoreDB's JSON form.
 *
 * - `position` ($all): `{"$c": commitPosition, "$p": preparePosition}`; zero is C:0/P:-1.
 * - `streams` (one stream, a category's `$ce-` stream, or several streams): `{"$s": {"s": n}}`,
 *   the last event number processed in each; zero is -1 for each.
 *
 * Written as the metadata of checkpoint events, partition states and every emitted event
 * (with `$v` = "projectionId:epoch:version:subsystemVersion" and extra keys such as `$causedBy`),
 * and in the `ES-Position` header. Pure functions only.
 */

export type CheckpointTag =
  | { readonly mode: 'position'; readonly commit: number; readonly prepare: number }
  | { readonly mode: 'streams'; readonly streams: Readonly<Record<string, number>> };

/** A projection's identity in emitted metadata: its id (event number in $projections-$all), epoch and version. */
export interface ProjectionVersion {
  readonly id: number;
  readonly epoch: number;
  readonly version: number;
}

/** EventStoreDB's ProjectionsSubsystem.VERSION, the fourth part of `$v`. */
export const SUBSYSTEM_VERSION = 4;

export const ZERO_POSITION_TAG: CheckpointTag = { mode: 'position', commit: 0, prepare: -1 };

export function zeroStreamsTag(streams: readonly string[]): CheckpointTag {
  const map: Record<string, number> = {};
  for (const stream of streams) map[stream] = -1;
  return { mode: 'streams', streams: map };
}

export function versionText(version: ProjectionVersion): string {
  return `${version.id}:${version.epoch}:${version.version}:${SUBSYSTEM_VERSION}`;
}

/**
 * The tag as JSON text, optionally with the projection's version first and extra properties
 * (name -> raw JSON text) after, as EventStoreDB's CheckpointTag.WriteTo.
 */
export function tagToJson(
  tag: CheckpointTag,
  version?: ProjectionVersion,
  extra?: Readonly<Record<string, string>>,
): string {
  let text = '{';
  if (version !== undefined && version.id > 0) text += `${versionMember(version)},`;
  text += tagMembers(tag);
  if (extra !== undefined) for (const key in extra) text += `,${JSON.stringify(key)}:${extra[key]}`;
  return `${text}}`;
}

/** `"$v":"id:epoch:version:4"`, the first member of emitted events' metadata. */
export function versionMember(version: ProjectionVersion): string {
  return `"$v":${JSON.stringify(versionText(version))}`;
}

/** The tag's own members: `"$c":1,"$p":2` or `"$s":{...}`. */
export function tagMembers(tag: CheckpointTag): string {
  if (tag.mode === 'position') return `"$c":${tag.commit},"$p":${tag.prepare}`;
  let streams = '';
  for (const s in tag.streams) streams += `${streams === '' ? '' : ','}${JSON.stringify(s)}:${tag.streams[s]}`;
  return `"$s":{${streams}}`;
}

export interface ParsedTag {
  readonly tag: CheckpointTag;
  /** Undefined when the JSON has no `$v`. */
  readonly version: ProjectionVersion | undefined;
  /** Properties other than the tag's own, as parsed JSON values. */
  readonly extra: Readonly<Record<string, unknown>>;
}

const TAG_KEYS = new Set(['$v', 'v', '$c', 'c', 'commitPosition', '$p', 'p', 'preparePosition', '$s', 's', 'streams', '$ph', '$m', '$cp']);

/** Parses tag JSON (also EventStoreDB's long names); undefined when it is not a checkpoint tag. */
export function parseTag(text: string | Buffer): ParsedTag | undefined {
  let value: unknown;
  try {
    value = JSON.parse(typeof text === 'string' ? text : text.toString('utf8'));
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const o = value as Record<string, unknown>;
  const version = parseVersion(o['$v'] ?? o['v']);
  const extra: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(o)) if (!TAG_KEYS.has(key)) extra[key] = v;
  const streams = o['$s'] ?? o['s'] ?? o['streams'];
  if (streams !== undefined) {
    if (streams === null || typeof streams !== 'object' || Array.isArray(streams)) return undefined;
    const map: Record<string, number> = {};
    for (const [s, n] of Object.entries(streams as Record<string, unknown>)) {
      if (typeof n !== 'number' || !Number.isSafeInteger(n)) return undefined;
      map[s] = n;
    }
    return { tag: { mode: 'streams', streams: map }, version, extra };
  }
  const commit = o['$c'] ?? o['c'] ?? o['commitPosition'];
  const prepare = o['$p'] ?? o['p'] ?? o['preparePosition'];
  if (typeof prepare !== 'number' || !Number.isSafeInteger(prepare)) return undefined;
  const c = typeof commit === 'number' && Number.isSafeInteger(commit) ? commit : prepare;
  return { tag: { mode: 'position', commit: c, prepare }, version, extra };
}

function parseVersion(value: unknown): ProjectionVersion | undefined {
  if (typeof value === 'number') return { id: 0, epoch: 0, version: value };
  if (typeof value !== 'string') return undefined;
  const parts = value.split(':').map((p) => Number(p));
  if (parts.some((p) => !Number.isInteger(p))) return undefined;
  if (parts.length === 2) return { id: 0, epoch: 0, version: parts[1] ?? 0 };
  if (parts.length < 3) return undefined;
  return { id: parts[0] ?? 0, epoch: parts[1] ?? 0, version: parts[2] ?? 0 };
}

/**
 * Orders two tags of the same projection. Stream tags move one stream at a time as events are
 * processed in log order, so along a projection's run the sum of their numbers orders them.
 */
export function compareTags(a: CheckpointTag, b: CheckpointTag): number {
  if (a.mode === 'position' && b.mode === 'position') {
    if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
    return a.prepare === b.prepare ? 0 : a.prepare < b.prepare ? -1 : 1;
  }
  if (a.mode === 'streams' && b.mode === 'streams') {
    const keys = new Set([...Object.keys(a.streams), ...Object.keys(b.streams)]);
    let sumA = 0;
    let sumB = 0;
    for (const key of keys) {
      sumA += a.streams[key] ?? -1;
      sumB += b.streams[key] ?? -1;
    }
    return sumA === sumB ? 0 : sumA < sumB ? -1 : 1;
  }
  throw new Error('cannot compare checkpoint tags of different kinds');
}

/** EventStoreDB's CheckpointTag.ToString, shown as `position` and `lastCheckpoint` in statistics. */
export function tagToString(tag: CheckpointTag): string {
  if (tag.mode === 'position') return `C:${tag.commit}/P:${tag.prepare}`;
  const entries = Object.entries(tag.streams);
  if (entries.length === 1) {
    const [stream, n] = entries[0] ?? ['', -1];
    return `${stream}: ${n}`;
  }
  return entries.map(([stream, n]) => `${stream}: ${n}; `).join('');
}

/** The tag after processing an event at this position / stream number. */
export function advanceTag(tag: CheckpointTag, event: { commitPosition: number; logPosition: number; stream: string; eventNumber: number }): CheckpointTag {
  if (tag.mode === 'position') return { mode: 'position', commit: event.commitPosition, prepare: event.logPosition };
  return { mode: 'streams', streams: { ...tag.streams, [event.stream]: event.eventNumber } };
}
