// Small pieces every page uses: the error banner, polling, the hash route, pretty JSON.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { message } from './api.js';

export function ErrorBanner({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <p class="error" role="alert">
      {message(error)}
    </p>
  );
}

export function Notice({ text }: { text: string | undefined }) {
  if (text === undefined) return null;
  return (
    <p class="notice" role="status">
      {text}
    </p>
  );
}

/** Runs `load` now and every `everyMs` (while the page is shown), keeping its last value and error. */
export function usePoll<T>(load: (signal: AbortSignal) => Promise<T>, everyMs: number, deps: readonly unknown[]) {
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const next = await loadRef.current(controller.signal);
        if (controller.signal.aborted) return;
        setValue(next);
        setError(undefined);
      } catch (err) {
        if (controller.signal.aborted) return;
        setError(err);
      }
      if (everyMs > 0 && !controller.signal.aborted) timer = setTimeout(() => void run(), everyMs);
    };
    void run();
    return () => {
      controller.abort();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [...deps, tick]);
  return { value, error, reload: () => setTick((t) => t + 1) };
}

/** An action button's state: busy while it runs, its error shown beside it. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const run = async (what: () => Promise<string | void>) => {
    setBusy(true);
    setError(undefined);
    setDone(undefined);
    try {
      const text = await what();
      if (typeof text === 'string') setDone(text);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, done, run };
}

export function useHashRoute(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return hash.replace(/^#/, '') || '/dashboard';
}

export function go(route: string): void {
  location.hash = `#${route}`;
}

/** JSON pretty-printed when it parses; anything else as the text it is. */
export function pretty(text: string | undefined): string {
  if (text === undefined || text === '') return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section class="card" aria-label={title}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return '';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 && Number.isInteger(n) ? 0 : 1)} ${units[i]}`;
}
