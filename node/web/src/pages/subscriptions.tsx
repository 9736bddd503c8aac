import { useState } from 'preact/hooks';
import { enc, getJson, request, sendJson, type Session } from '../api.js';
import { ErrorBanner, go, Notice, pretty, Section, useAction, usePoll } from '../ui.js';

interface Summary {
  eventStreamId: string;
  groupName: string;
  status: string;
  averageItemsPerSecond: number;
  totalItemsProcessed: number;
  lastProcessedEventNumber: number;
  lastKnownEventNumber: number;
  connectionCount: number;
  totalInFlightMessages: number;
}

interface Info extends Summary {
  config: Settings;
  parkedMessageCount: number;
  outstandingMessagesCount: number;
  connections: { from: string; username: string; averageItemsPerSecond: number; inFlightMessages: number }[];
}

type Settings = Record<string, string | number | boolean>;

const SETTINGS: { key: string; label: string; kind: 'number' | 'boolean' | 'text' | 'strategy'; initial: string | number | boolean }[] = [
  { key: 'startFrom', label: 'Start from (event number; -1: the end)', kind: 'number', initial: 0 },
  { key: 'resolveLinktos', label: 'Resolve links', kind: 'boolean', initial: false },
  { key: 'messageTimeoutMilliseconds', label: 'Message timeout (ms)', kind: 'number', initial: 10000 },
  { key: 'maxRetryCount', label: 'Max retries before parking', kind: 'number', initial: 10 },
  { key: 'maxSubscriberCount', label: 'Max subscribers (0: no limit)', kind: 'number', initial: 10 },
  { key: 'liveBufferSize', label: 'Live buffer size', kind: 'number', initial: 500 },
  { key: 'readBatchSize', label: 'Read batch size', kind: 'number', initial: 20 },
  { key: 'bufferSize', label: 'History buffer size', kind: 'number', initial: 500 },
  { key: 'checkPointAfterMilliseconds', label: 'Checkpoint after (ms)', kind: 'number', initial: 1000 },
  { key: 'minCheckPointCount', label: 'Min checkpoint count', kind: 'number', initial: 10 },
  { key: 'maxCheckPointCount', label: 'Max checkpoint count', kind: 'number', initial: 500 },
  { key: 'namedConsumerStrategy', label: 'Consumer strategy', kind: 'strategy', initial: 'RoundRobin' },
  { key: 'extraStatistics', label: 'Extra statistics', kind: 'boolean', initial: false },
];

/** #/subscriptions (list and create) and #/subscriptions/<stream>/<group> (one group). */
export function Subscriptions({ path, session }: { path: string[]; session: Session }) {
  const [stream, group] = path;
  if (stream === undefined || stream === '' || group === undefined) return <SubscriptionList />;
  return <SubscriptionPage key={`${stream}/${group}`} stream={stream} group={group} session={session} />;
}

function SubscriptionList() {
  const list = usePoll((s) => getJson<Summary[]>('/subscriptions', s), 2000, []);
  return (
    <div class="page">
      <h1>Persistent subscriptions</h1>
      <ErrorBanner error={list.error} />
      <Section title="Groups">
        <div class="scroll">
          <table data-testid="subscriptions">
            <thead>
              <tr>
                <th>Stream</th>
                <th>Group</th>
                <th>Status</th>
                <th>Items/s</th>
                <th>Processed</th>
                <th>Last processed / known</th>
                <th>Connections</th>
                <th>In flight</th>
              </tr>
            </thead>
            <tbody>
              {(list.value ?? []).map((s) => (
                <tr key={`${s.eventStreamId}/${s.groupName}`}>
                  <td>{s.eventStreamId}</td>
                  <td>
                    <a href={`#/subscriptions/${enc(s.eventStreamId)}/${enc(s.groupName)}`}>{s.groupName}</a>
                  </td>
                  <td>{s.status}</td>
                  <td>{s.averageItemsPerSecond}</td>
                  <td>{s.totalItemsProcessed}</td>
                  <td>
                    {s.lastProcessedEventNumber} / {s.lastKnownEventNumber}
                  </td>
                  <td>{s.connectionCount}</td>
                  <td>{s.totalInFlightMessages}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {list.value !== undefined && list.value.length === 0 && <p>No persistent subscriptions.</p>}
      </Section>
      <Section title="Create a subscription group">
        <SettingsForm submitLabel="Create" withNames />
      </Section>
    </div>
  );
}

function SettingsForm({ submitLabel, withNames, stream, group, initial, onSaved }: { submitLabel: string; withNames?: boolean; stream?: string; group?: string; initial?: Settings; onSaved?: () => void }) {
  const [names, setNames] = useState({ stream: stream ?? '', group: group ?? '' });
  const [values, setValues] = useState<Settings>(() => Object.fromEntries(SETTINGS.map((s) => [s.key, initial?.[s.key] ?? s.initial])));
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const path = `/subscriptions/${enc(names.stream)}/${enc(names.group)}`;
      await sendJson(withNames === true ? 'PUT' : 'POST', path, values);
      onSaved?.();
      if (withNames === true) go(`/subscriptions/${enc(names.stream)}/${enc(names.group)}`);
      return 'Settings saved.';
    });
  };
  return (
    <form class="stack" onSubmit={submit}>
      {withNames === true && (
        <div class="row">
          <label>
            Stream
            <input name="subStream" required value={names.stream} onInput={(e) => setNames({ ...names, stream: e.currentTarget.value })} />
          </label>
          <label>
            Group
            <input name="subGroup" required value={names.group} onInput={(e) => setNames({ ...names, group: e.currentTarget.value })} />
          </label>
        </div>
      )}
      <div class="grid">
        {SETTINGS.map((s) => (
          <label key={s.key} class={s.kind === 'boolean' ? 'inline' : ''}>
            {s.kind === 'boolean' ? (
              <>
                <input type="checkbox" name={s.key} checked={values[s.key] === true} onChange={(e) => setValues({ ...values, [s.key]: e.currentTarget.checked })} /> {s.label}
              </>
            ) : s.kind === 'strategy' ? (
              <>
                {s.label}
                <select name={s.key} value={String(values[s.key])} onChange={(e) => setValues({ ...values, [s.key]: e.currentTarget.value })}>
                  <option>RoundRobin</option>
                  <option>DispatchToSingle</option>
                  <option>Pinned</option>
                </select>
              </>
            ) : (
              <>
                {s.label}
                <input name={s.key} type="number" value={String(values[s.key])} onInput={(e) => setValues({ ...values, [s.key]: Number(e.currentTarget.value) })} />
              </>
            )}
          </label>
        ))}
      </div>
      <div class="row">
        <button type="submit" disabled={action.busy}>
          {submitLabel}
        </button>
      </div>
      <Notice text={action.done} />
      <ErrorBanner error={action.error} />
    </form>
  );
}

interface Parked {
  entries: { eventNumber: number; eventType: string; data?: string; positionEventNumber: number; positionStreamId: string; streamId: string }[];
}

function SubscriptionPage({ stream, group }: { stream: string; group: string; session: Session }) {
  const info = usePoll((s) => getJson<Info>(`/subscriptions/${enc(stream)}/${enc(group)}/info`, s), 2000, [stream, group]);
  const parkedStream = `$persistentsubscription-${stream}::${group}-parked`;
  const parked = usePoll(
    async (s) => {
      try {
        const r = await request(`/streams/${enc(parkedStream)}/head/backward/20?embed=tryharder`, { accept: 'application/vnd.eventstore.atom+json', signal: s });
        return ((await r.json()) as Parked).entries;
      } catch (err) {
        // no message was ever parked: the stream does not exist yet
        if (err instanceof Error && 'status' in err && err.status === 404) return [];
        throw err;
      }
    },
    2000,
    [parkedStream],
  );
  const action = useAction();
  const i = info.value;
  return (
    <div class="page">
      <h1>
        <a href="#/subscriptions">Subscriptions</a> / {stream} / {group}
      </h1>
      <ErrorBanner error={info.error} />
      {i !== undefined && (
        <Section title="Statistics">
          <dl class="facts">
            <dt>Status</dt>
            <dd>{i.status}</dd>
            <dt>Processed</dt>
            <dd>{i.totalItemsProcessed}</dd>
            <dt>Items/s</dt>
            <dd>{i.averageItemsPerSecond}</dd>
            <dt>Last processed / known</dt>
            <dd>
              {i.lastProcessedEventNumber} / {i.lastKnownEventNumber}
            </dd>
            <dt>In flight / outstanding</dt>
            <dd>
              {i.totalInFlightMessages} / {i.outstandingMessagesCount}
            </dd>
            <dt>Parked messages</dt>
            <dd data-testid="parked-count">{i.parkedMessageCount}</dd>
            <dt>Connections</dt>
            <dd>{i.connections.length === 0 ? 'none' : i.connections.map((c) => `${c.from} (${c.username}, ${c.inFlightMessages} in flight)`).join(', ')}</dd>
          </dl>
        </Section>
      )}
      <Section title="Parked messages">
        <ErrorBanner error={parked.error} />
        <ol class="events" data-testid="parked">
          {(parked.value ?? []).map((e) => (
            <li key={e.eventNumber}>
              <details>
                <summary>
                  {e.positionEventNumber}@{e.positionStreamId} <span class="type">{e.eventType}</span>
                </summary>
                <pre>{pretty(e.data)}</pre>
              </details>
            </li>
          ))}
        </ol>
        {parked.value !== undefined && parked.value.length === 0 && <p>No parked messages.</p>}
        <div class="row">
          <button
            type="button"
            disabled={action.busy}
            onClick={() =>
              action.run(async () => {
                await request(`/subscriptions/${enc(stream)}/${enc(group)}/replayParked`, { method: 'POST' });
                info.reload();
                parked.reload();
                return 'Parked messages replayed to the group.';
              })
            }
          >
            Replay parked messages
          </button>
          <button
            type="button"
            class="danger"
            disabled={action.busy}
            onClick={() =>
              action.run(async () => {
                await request(`/subscriptions/${enc(stream)}/${enc(group)}`, { method: 'DELETE' });
                go('/subscriptions');
              })
            }
          >
            Delete group
          </button>
        </div>
        <Notice text={action.done} />
        <ErrorBanner error={action.error} />
      </Section>
      {i !== undefined && (
        <Section title="Settings">
          <SettingsForm submitLabel="Save settings" stream={stream} group={group} initial={i.config} onSaved={info.reload} />
        </Section>
      )}
    </div>
  );
}
