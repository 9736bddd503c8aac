/**
 * Reading away the rest of a request body the server has refused (413, a body that failed to
 * parse) before it answers. Without it the server closes the connection while the client is
 * still sending: the kernel answers the unread bytes with a reset, and the client sees
 * "connection reset" instead of the 413 and its message (undici's fetch: "fetch failed").
 * Bounded in bytes and time, so that a client sending forever cannot hold the connection; past
 * either bound the connection closes as before.
 */
import type { Readable } from 'node:stream';

/** Past this many discarded bytes the connection is closed instead. */
export const BODY_DRAIN_MAX_BYTES = 128 * 1024 * 1024;
/** Past this long the connection is closed instead. */
export const BODY_DRAIN_MAX_MS = 10_000;

export interface DrainableRequest extends Readable {
  readonly complete: boolean;
}

/**
 * Discards what is left of `request`'s body; true once it has ended (the connection may stay
 * open), false when a bound was hit or the stream failed (it must close).
 */
export function drainRequestBody(
  request: DrainableRequest,
  limits: { readonly maxBytes: number; readonly maxMs: number } = { maxBytes: BODY_DRAIN_MAX_BYTES, maxMs: BODY_DRAIN_MAX_MS },
): Promise<boolean> {
  if (request.complete || request.readableEnded) return Promise.resolve(true);
  if (request.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    let discardedBytes = 0;
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
      if (!ended) request.pause();
      resolve(ended);
    };
    const onData = (chunk: Buffer | string) => {
      discardedBytes += chunk.length;
      if (discardedBytes > limits.maxBytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onError = () => finish(false);
    const onClose = () => finish(request.complete);
    const timer = setTimeout(() => finish(false), limits.maxMs);
    timer.unref();
    request.on('data', onData);
    request.once('end', onEnd);
    request.once('error', onError);
    request.once('close', onClose);
    request.resume();
  });
}
