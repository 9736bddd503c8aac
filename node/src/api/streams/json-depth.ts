/**
 * A guard against deeply nested JSON. V8 parses any depth but serializes recursively, so a
 * client could store `[[[[...]]]]` and make every later read overflow the stack. Documents
 * nested deeper than JSON_DEPTH_MAX are treated as invalid on write and as text on read.
 */

/** Newtonsoft's JsonReader refuses more than 64 levels by default; we allow twice that. */
export const JSON_DEPTH_MAX = 128;

/** True when the brackets of `text`, outside strings, nest deeper than `depthMax`. */
export function isJsonTooDeep(text: string, depthMax: number = JSON_DEPTH_MAX): boolean {
  let depth = 0;
  let inString = false;
  for (let charIndex = 0; charIndex < text.length; charIndex++) {
    const code = text.charCodeAt(charIndex);
    if (inString) {
      if (code === 0x5c) charIndex++;
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) {
      inString = true;
    } else if (code === 0x5b || code === 0x7b) {
      depth++;
      if (depth > depthMax) return true;
    } else if (code === 0x5d || code === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** JSON.parse for stored or received text; undefined when invalid or too deep. */
export function parseJsonSafely(
  text: string,
  depthMax: number = JSON_DEPTH_MAX,
): { value: unknown } | undefined {
  if (isJsonTooDeep(text, depthMax)) return undefined;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}
