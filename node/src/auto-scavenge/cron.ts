/**
 * Standard five-field CRON expressions (minute hour day-of-month month day-of-week), as the
 * original's NCrontab reads them, evaluated in UTC: `*`, numbers, ranges `a-b`, steps `* /n` and
 * `a-b/n`, lists `a,b`, month names JAN-DEC, day names SUN-SAT (0 or 7 is Sunday). When both
 * day fields are restricted a day matching either runs (the classic cron rule).
 *
 * The next cycle is the first minute strictly after an anchor (cron.ts knows nothing of anchors:
 * the state machine picks the anchor, see state.ts).
 */

export interface CronSchedule {
  readonly text: string;
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly daysOfMonth: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  /** 0 = Sunday. */
  readonly daysOfWeek: ReadonlySet<number>;
  readonly dayOfMonthRestricted: boolean;
  readonly dayOfWeekRestricted: boolean;
}

export class CronError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CronError';
  }
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldSpec {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
  /** Value of the first name (JAN = 1, SUN = 0). */
  readonly namesFrom?: number;
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES, namesFrom: 1 },
  { name: 'day of week', min: 0, max: 7, names: DAY_NAMES, namesFrom: 0 },
];

function parseValue(text: string, spec: FieldSpec): number {
  const upper = text.toUpperCase();
  const named = spec.names?.indexOf(upper) ?? -1;
  if (named >= 0) return named + (spec.namesFrom ?? 0);
  if (!/^\d+$/.test(text)) throw new CronError(`${spec.name}: '${text}' is not a number`);
  const value = Number(text);
  if (value < spec.min || value > spec.max) {
    throw new CronError(`${spec.name}: ${value} is outside ${spec.min}-${spec.max}`);
  }
  return value;
}

function parseField(text: string, spec: FieldSpec): Set<number> {
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const [range = '', stepText] = part.split('/');
    if (part.split('/').length > 2) throw new CronError(`${spec.name}: '${part}' has more than one step`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) === 0) throw new CronError(`${spec.name}: step '${stepText}' must be a positive number`);
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === '*') {
      from = spec.min;
      to = spec.max;
    } else if (range.includes('-')) {
      const [a = '', b = ''] = range.split('-');
      from = parseValue(a, spec);
      to = parseValue(b, spec);
      if (from > to) throw new CronError(`${spec.name}: range '${range}' runs backwards`);
    } else {
      from = parseValue(range, spec);
      // `5/15` means from 5 to the end in steps of 15.
      to = stepText === undefined ? from : spec.max;
    }
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return values;
}

/** Parses a five-field expression; throws CronError naming the field at fault. */
export function parseCron(text: string): CronSchedule {
  const fields = text.trim().split(/\s+/);
  if (fields.length !== 5 || fields[0] === '') {
    throw new CronError(`expected 5 fields (minute hour day-of-month month day-of-week), got ${fields[0] === '' ? 0 : fields.length}`);
  }
  const [minutes, hours, daysOfMonth, months, daysOfWeekRaw] = fields.map((f, i) => parseField(f, FIELDS[i]!)) as [
    Set<number>, Set<number>, Set<number>, Set<number>, Set<number>,
  ];
  const daysOfWeek = new Set([...daysOfWeekRaw].map((d) => d % 7));
  return {
    text: text.trim(), minutes, hours, daysOfMonth, months, daysOfWeek,
    dayOfMonthRestricted: fields[2] !== '*',
    dayOfWeekRestricted: fields[4] !== '*',
  };
}

/** The expression, or undefined when it does not parse. */
export function tryParseCron(text: string): CronSchedule | undefined {
  try {
    return parseCron(text);
  } catch {
    return undefined;
  }
}

function dayMatches(schedule: CronSchedule, date: Date): boolean {
  const dom = schedule.daysOfMonth.has(date.getUTCDate());
  const dow = schedule.daysOfWeek.has(date.getUTCDay());
  if (schedule.dayOfMonthRestricted && schedule.dayOfWeekRestricted) return dom || dow;
  if (schedule.dayOfMonthRestricted) return dom;
  if (schedule.dayOfWeekRestricted) return dow;
  return true;
}

const MINUTE_MS = 60_000;
/** Beyond this the expression never fires (e.g. 31 February). */
const SEARCH_LIMIT_YEARS = 5;

/**
 * The first whole minute strictly after `afterMs` that the schedule matches, in ms since the
 * epoch (UTC); undefined when none comes within five years.
 */
export function nextOccurrenceMs(schedule: CronSchedule, afterMs: number): number | undefined {
  const date = new Date(Math.floor(afterMs / MINUTE_MS) * MINUTE_MS + MINUTE_MS);
  const limit = afterMs + SEARCH_LIMIT_YEARS * 366 * 24 * 60 * MINUTE_MS;
  while (date.getTime() <= limit) {
    if (!schedule.months.has(date.getUTCMonth() + 1)) {
      date.setUTCMonth(date.getUTCMonth() + 1, 1);
      date.setUTCHours(0, 0, 0, 0);
      continue;
    }
    if (!dayMatches(schedule, date)) {
      date.setUTCDate(date.getUTCDate() + 1);
      date.setUTCHours(0, 0, 0, 0);
      continue;
    }
    if (!schedule.hours.has(date.getUTCHours())) {
      date.setUTCHours(date.getUTCHours() + 1, 0, 0, 0);
      continue;
    }
    if (!schedule.minutes.has(date.getUTCMinutes())) {
      date.setUTCMinutes(date.getUTCMinutes() + 1, 0, 0);
      continue;
    }
    return date.getTime();
  }
  return undefined;
}
