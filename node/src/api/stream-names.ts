/**
 * Stream and group names as every protocol accepts them, checked once at the edge (HTTP route
 * schemas; the gRPC services call the same functions): not empty, no control characters (C0,
 * DEL, C1), no lone UTF-16 surrogates and no U+FFFE/U+FFFF. Such characters cannot appear in an
 * XML document at all (not even as character references), so a stream named with one would make
 * every Atom XML page that shows it (the stream's, `$all`'s) unreadable for XML clients; in a
 * terminal or a log they hide what a name really is. Pure: no HTTP types.
 */
import { z } from 'zod';

// C0 controls, DEL, C1 controls, the two non-characters XML excludes.
const FORBIDDEN_CHARACTER = /[\u0000-\u001f\u007f-\u009f\ufffe\uffff]/u;
// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function codePointLabel(character: string): string {
  return `U+${(character.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Why `name` cannot name a `what` ('Stream name', 'Group name'); undefined when it can. */
export function nameProblem(name: string, what: string): string | undefined {
  if (name.length === 0) return `${what} must not be empty`;
  if (LONE_SURROGATE.test(name)) return `${what} must be valid Unicode text (it holds a lone surrogate)`;
  const bad = FORBIDDEN_CHARACTER.exec(name);
  if (bad !== null) return `${what} must not contain control characters (found ${codePointLabel(bad[0])} at offset ${bad.index})`;
  return undefined;
}

export function streamNameProblem(name: string): string | undefined {
  return nameProblem(name, 'Stream name');
}

export function groupNameProblem(name: string): string | undefined {
  return nameProblem(name, 'Group name');
}

function nameSchema(what: string) {
  return z.string().superRefine((value, context) => {
    const problem = nameProblem(value, what);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
  });
}

/** A route parameter naming a stream. */
export const StreamNameSchema = nameSchema('Stream name');
/** A route parameter naming a persistent-subscription group. */
export const GroupNameSchema = nameSchema('Group name');
