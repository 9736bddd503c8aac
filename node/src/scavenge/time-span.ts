/**
 * Durations in the text form of .NET's `TimeSpan` ("c" format), which EventStoreDB writes into
 * scavenge history events: `[-][d.]hh:mm:ss[.fffffff]`. The fraction has seven digits (ticks of
 * 100 ns) and is left out when it is zero; days appear only from one day up.
 */

const TICKS_PER_MS = 10_000;
const TICKS_PER_SECOND = 10_000_000;
const SECONDS_PER_DAY = 86_400;
const TIME_SPAN_PATTERN = /^(-)?(?:(\d+)\.)?(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,7}))?$/;

function pad2(value: number): string {
  return String(value).padStart(2, '0');
}

/** Formats a duration in milliseconds (fractions allowed) as a .NET TimeSpan string. */
export function formatTimeSpan(durationMs: number): string {
  const totalTicks = Math.round(Math.abs(durationMs) * TICKS_PER_MS);
  const fractionTicks = totalTicks % TICKS_PER_SECOND;
  const totalSeconds = (totalTicks - fractionTicks) / TICKS_PER_SECOND;
  const days = Math.floor(totalSeconds / SECONDS_PER_DAY);
  const secondsOfDay = totalSeconds % SECONDS_PER_DAY;
  const hours = Math.floor(secondsOfDay / 3600);
  const minutes = Math.floor((secondsOfDay % 3600) / 60);
  const seconds = secondsOfDay % 60;
  const sign = durationMs < 0 && totalTicks > 0 ? '-' : '';
  const dayPart = days > 0 ? `${days}.` : '';
  const fraction = fractionTicks > 0 ? `.${String(fractionTicks).padStart(7, '0')}` : '';
  return `${sign}${dayPart}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}${fraction}`;
}

/** Parses a .NET TimeSpan string into milliseconds; undefined when it is not one. */
export function parseTimeSpanMs(text: string): number | undefined {
  const match = TIME_SPAN_PATTERN.exec(text.trim());
  if (match === null) return undefined;
  const [, sign, days = '0', hours = '0', minutes = '0', seconds = '0', fraction = ''] = match;
  if (Number(hours) > 23 || Number(minutes) > 59 || Number(seconds) > 59) return undefined;
  const wholeSeconds =
    Number(days) * SECONDS_PER_DAY + Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds);
  const ticks = wholeSeconds * TICKS_PER_SECOND + Number(fraction.padEnd(7, '0'));
  const durationMs = ticks / TICKS_PER_MS;
  return sign === '-' ? -durationMs : durationMs;
}
