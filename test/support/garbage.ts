/**
 * Scavengeable data for auto-scavenge tests and benches: streams of 4 KiB events, three in four
 * deleted, written through a node that may be in the middle of a leader resignation.
 */
import { appendEvents, newEvent, uniqueStream, type Http } from './http-client.js';

/** Sends a request again while the cluster answers 503 or drops the connection (an election). */
async function untilAnswered<R extends { status: number }>(send: () => Promise<R>, done: readonly number[]): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await send();
      if (done.includes(response.status) || response.status !== 503 || attempt >= 100) return response;
    } catch (err: unknown) {
      if (attempt >= 100) throw err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Streams of 4 KiB events, three in four deleted: removable records in most chunks. */
export async function writeGarbage(http: Http, batches: number): Promise<void> {
  const payload = 'x'.repeat(4096);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < batches) {
      const index = next++;
      const stream = uniqueStream('garbage');
      const events = Array.from({ length: 50 }, (_, i) => newEvent('filler', { i, payload }));
      // A cycle may be under way (every minute): the leader resigning before its own scavenge
      // makes a write answer 503 or drop its connection for a moment. The same events (same ids)
      // are sent again, which the node takes as the one write.
      const written = await untilAnswered(() => appendEvents(http, stream, events), [201]);
      if (written.status !== 201) throw new Error(`append answered ${written.status}: ${written.text}`);
      if (index % 4 !== 0) {
        const deleted = await untilAnswered(() => http('DELETE', `/streams/${stream}`), [204, 410]);
        if (deleted.status !== 204 && deleted.status !== 410) throw new Error(`delete answered ${deleted.status}: ${deleted.text}`);
      }
    }
  };
  await Promise.all([worker(), worker(), worker()]);
}
