import { useState } from 'preact/hooks';
import { enc, getJson, request, uuid, type Session } from '../api.js';
import { ErrorBanner, go, Notice, pretty, Section, useAction, usePoll } from '../ui.js';

interface Link {
  uri: string;
  relation: string;
}

interface Entry {
  eventId: string;
  eventType: string;
  eventNumber: number;
  streamId: string;
  data?: string;
  metaData?: string;
  isJson: boolean;
  updated: string;
  positionEventNumber: number;
  positionStreamId: string;
}

interface Feed {
  links: Link[];
  entries: Entry[];
  headOfStream?: boolean;
}

const PAGE = 20;
const ATOM = 'application/vnd.eventstore.atom+json';

/** #/streams (the list), #/streams/<name>[/<from>/<direction>] (a page of one stream). */
export function Streams({ path, session }: { path: string[]; session: Session }) {
  const [name, from = 'head', direction = 'backward'] = path;
  if (name === undefined || name === '') return <StreamList />;
  return <StreamPage key={name} name={name} from={from} direction={direction} session={session} />;
}

function StreamList() {
  const [search, setSearch] = useState('');
  const recent = usePoll(async (signal) => {
    const feed = await getJsonAtom<Feed>(`/streams/%24all/head/backward/100?embed=tryharder`, signal);
    const names: string[] = [];
    for (const entry of feed.entries) {
      const stream = entry.positionStreamId ?? entry.streamId;
      if (!names.includes(stream) && !stream.startsWith('$')) names.push(stream);
    }
    return names;
  }, 0, []);
  return (
    <div class="page">
      <h1>Streams</h1>
      <Section title="Open a stream">
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (search.trim() !== '') go(`/streams/${enc(search.trim())}`);
          }}
        >
          <label>
            Stream name
            <input name="stream" value={search} onInput={(e) => setSearch(e.currentTarget.value)} placeholder="orders-42 or $all" />
          </label>
          <button type="submit">Open</button>
          <a class="button" href="#/streams/%24all">
            Browse $all
          </a>
        </form>
      </Section>
      <Section title="Recently written">
        <ErrorBanner error={recent.error} />
        {recent.value !== undefined && recent.value.length === 0 && <p>No user streams written recently.</p>}
        <ul class="names" data-testid="recent-streams">
          {(recent.value ?? []).map((n) => (
            <li key={n}>
              <a href={`#/streams/${enc(n)}`}>{n}</a>
            </li>
          ))}
        </ul>
      </Section>
    </div>
  );
}

async function getJsonAtom<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await request(path, { accept: ATOM, ...(signal === undefined ? {} : { signal }) });
  return (await response.json()) as T;
}

/** The route of a feed link: /streams/<name>/<from>/<direction>/<count> → from and direction. */
function pageOf(link: Link | undefined): string | undefined {
  if (link === undefined) return undefined;
  const match = /\/streams\/([^/]+)\/([^/]+)\/(forward|backward)\/\d+/.exec(new URL(link.uri, location.href).pathname);
  if (match === null) return undefined;
  return `/streams/${match[1]}/${match[2]}/${match[3]}`;
}

function StreamPage({ name, from, direction, session }: { name: string; from: string; direction: string; session: Session }) {
  const isAll = name === '$all';
  const feed = usePoll(
    (signal) => getJsonAtom<Feed>(`/streams/${enc(name)}/${enc(from)}/${direction === 'forward' ? 'forward' : 'backward'}/${PAGE}?embed=tryharder`, signal),
    0,
    [name, from, direction],
  );
  const [position, setPosition] = useState('');
  const rel = (r: string) => feed.value?.links.find((l) => l.relation === r);
  // Atom feeds list newest first whichever way they were read.
  const entries = feed.value?.entries ?? [];
  const nav = [
    ['Newest', pageOf(rel('first'))],
    ['Newer', pageOf(rel('previous'))],
    ['Older', pageOf(rel('next'))],
    ['Oldest', pageOf(rel('last'))],
  ] as const;
  return (
    <div class="page">
      <h1>
        <a href="#/streams">Streams</a> / <span data-testid="stream-name">{name}</span>
      </h1>
      <ErrorBanner error={feed.error} />
      <Section title="Events">
        <div class="row">
          {nav.map(([label, route]) =>
            route === undefined ? (
              <button type="button" disabled>
                {label}
              </button>
            ) : (
              <a class="button" href={`#${route}`}>
                {label}
              </a>
            ),
          )}
          <button type="button" onClick={feed.reload}>
            Refresh
          </button>
        </div>
        {isAll && (
          <form
            class="row"
            onSubmit={(e) => {
              e.preventDefault();
              go(`/streams/%24all/${enc(toAllPosition(position))}/forward`);
            }}
          >
            <label>
              From position
              <input name="position" value={position} onInput={(e) => setPosition(e.currentTarget.value)} placeholder="commit position (number) or 32 hex digits" />
            </label>
            <button type="submit">Go</button>
          </form>
        )}
        {feed.value !== undefined && entries.length === 0 && <p>No events on this page.</p>}
        <ol class="events" data-testid="events">
          {entries.map((e) => (
            <li key={`${e.positionStreamId}/${e.positionEventNumber}`}>
              <details>
                <summary>
                  <span class="num" data-testid="event-number">
                    {isAll ? `${e.positionEventNumber}@${e.positionStreamId}` : e.eventNumber}
                  </span>{' '}
                  <span class="type">{e.eventType}</span> <time>{e.updated}</time>
                </summary>
                <EventBody entry={e} />
              </details>
            </li>
          ))}
        </ol>
      </Section>
      {!isAll && <Append stream={name} onAppended={() => go(`/streams/${enc(name)}`)} reload={feed.reload} />}
      {!isAll && <Metadata stream={name} />}
      {!isAll && <Delete stream={name} session={session} />}
    </div>
  );
}

function EventBody({ entry }: { entry: Entry }) {
  return (
    <div class="body">
      <p class="hint">
        id {entry.eventId}, {entry.isJson ? 'JSON' : 'not JSON (shown as the node returns it)'}
        {entry.streamId !== entry.positionStreamId ? `, link to ${entry.eventNumber}@${entry.streamId}` : ''}
      </p>
      <h3>Data</h3>
      <pre data-testid="event-data">{entry.isJson ? pretty(entry.data) : (entry.data ?? '')}</pre>
      {entry.metaData !== undefined && entry.metaData !== '' && (
        <>
          <h3>Metadata</h3>
          <pre>{pretty(entry.metaData)}</pre>
        </>
      )}
    </div>
  );
}

/** A commit position typed as a number becomes the $all feed's 32 hex digits (commit and prepare). */
function toAllPosition(text: string): string {
  const t = text.trim();
  if (t === '' || t === 'head') return 'head';
  if (/^\d+$/.test(t)) {
    const hex = BigInt(t).toString(16).toUpperCase().padStart(16, '0');
    return hex + hex;
  }
  return t;
}

function Append({ stream, onAppended, reload }: { stream: string; onAppended: () => void; reload: () => void }) {
  const [type, setType] = useState('');
  const [data, setData] = useState('{\n  \n}');
  const [meta, setMeta] = useState('');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      let parsedData: unknown;
      let parsedMeta: unknown;
      try {
        parsedData = JSON.parse(data);
        parsedMeta = meta.trim() === '' ? undefined : JSON.parse(meta);
      } catch (err) {
        throw new Error(`The data and metadata must be JSON: ${err instanceof Error ? err.message : String(err)}`);
      }
      const event = { eventId: uuid(), eventType: type, data: parsedData, ...(parsedMeta === undefined ? {} : { metadata: parsedMeta }) };
      await request(`/streams/${enc(stream)}`, { method: 'POST', contentType: 'application/vnd.eventstore.events+json', body: JSON.stringify([event]) });
      onAppended();
      reload();
      return `Appended ${type}.`;
    });
  };
  return (
    <Section title="Append an event">
      <form class="stack" onSubmit={submit}>
        <label>
          Event type
          <input name="eventType" required value={type} onInput={(e) => setType(e.currentTarget.value)} />
        </label>
        <label>
          Data (JSON)
          <textarea name="data" class="code" rows={5} value={data} onInput={(e) => setData(e.currentTarget.value)} />
        </label>
        <label>
          Metadata (JSON, optional)
          <textarea name="metadata" class="code" rows={2} value={meta} onInput={(e) => setMeta(e.currentTarget.value)} />
        </label>
        <div class="row">
          <button type="submit" disabled={action.busy}>
            Append
          </button>
        </div>
        <Notice text={action.done} />
        <ErrorBanner error={action.error} />
      </form>
    </Section>
  );
}

function Metadata({ stream }: { stream: string }) {
  const [text, setText] = useState<string | undefined>(undefined);
  const current = usePoll(
    async (signal) => {
      const response = await request(`/streams/${enc(stream)}/metadata`, { accept: 'application/json', signal });
      const body = await response.text();
      const shown = body.trim() === '' ? '{}' : pretty(body);
      setText(shown);
      return shown;
    },
    0,
    [stream],
  );
  const action = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text ?? '{}');
      } catch (err) {
        throw new Error(`The metadata must be JSON: ${err instanceof Error ? err.message : String(err)}`);
      }
      await request(`/streams/${enc(stream)}/metadata`, {
        method: 'POST',
        contentType: 'application/vnd.eventstore.events+json',
        body: JSON.stringify([{ eventId: uuid(), eventType: '$metadata', data: parsed }]),
      });
      current.reload();
      return 'Metadata saved.';
    });
  };
  return (
    <Section title="Stream metadata and ACL">
      <ErrorBanner error={current.error} />
      <form class="stack" onSubmit={save}>
        <label>
          Metadata (JSON: $maxCount, $maxAge, $tb, $cacheControl, $acl with $r, $w, $d, $mr, $mw)
          <textarea name="streamMetadata" class="code" rows={8} value={text ?? ''} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <div class="row">
          <button type="submit" disabled={action.busy || text === undefined}>
            Save metadata
          </button>
          <button
            type="button"
            onClick={() =>
              setText(
                JSON.stringify({ ...safeParse(text), $acl: { $r: '$all', $w: '$admins', $d: '$admins', $mr: '$admins', $mw: '$admins' } }, null, 2),
              )
            }
          >
            Insert an ACL template
          </button>
        </div>
        <Notice text={action.done} />
        <ErrorBanner error={action.error} />
      </form>
    </Section>
  );
}

function safeParse(text: string | undefined): Record<string, unknown> {
  try {
    const value = JSON.parse(text ?? '{}') as unknown;
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function Delete({ stream }: { stream: string; session: Session }) {
  const [confirming, setConfirming] = useState(false);
  const [hard, setHard] = useState(false);
  const action = useAction();
  return (
    <Section title="Delete the stream">
      {!confirming ? (
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Delete…
        </button>
      ) : (
        <div class="row">
          <label class="inline">
            <input type="checkbox" checked={hard} onChange={(e) => setHard(e.currentTarget.checked)} /> Hard delete (the name can never be used again)
          </label>
          <button
            type="button"
            class="danger"
            disabled={action.busy}
            onClick={() =>
              action.run(async () => {
                await request(`/streams/${enc(stream)}`, { method: 'DELETE', headers: hard ? { 'ES-HardDelete': 'true' } : {} });
                setConfirming(false);
                return `Stream ${stream} deleted${hard ? ' for good' : ''}.`;
              })
            }
          >
            Delete {stream}
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      )}
      <Notice text={action.done} />
      <ErrorBanner error={action.error} />
    </Section>
  );
}
