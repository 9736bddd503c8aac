/**
 * A guard against deeply nested JSON. V8 parses any depth but serializes recursively, so a
 * client could store `[[[[...]]]]` and make every later read overflow the stack. Documents
 * nested deeper than JSON_DEPTH_MAX are treated as invalid on write and as text on read.
 */

/** Newtonsoft's JsonReader refuses more than 64 levels by default; we allow twice that. */
export const JSON_DEPTH_MAX = 128;

/**
 * True when the brackets of `text`, outside strings, nest deeper than `depthMax`. Strings are
 * skipped with indexOf (a quote preceded by an odd run of backslashes is escaped), so the scan
 * costs little more than the structure of the document.
 */
export function isJsonTooDeep(text: string, depthMax: number = JSON_DEPTH_MAX): boolean {
  let depth = 0;
  const length = text.length;
  for (let charIndex = 0; charIndex < length; charIndex++) {
    const code = text.charCodeAt(charIndex);
    if (code === 0x22) {
      const end = closingQuoteIndex(text, charIndex + 1);
      if (end < 0) return false;
      charIndex = end;
    } else if (code === 0x5b || code === 0x7b) {
      depth++;
      if (depth > depthMax) return true;
    } else if (code === 0x5d || code === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** Index of the quote that ends a string whose content starts at `from`; -1 when unterminated. */
function closingQuoteIndex(text: string, from: number): number {
  let quote = text.indexOf('"', from);
  while (quote >= 0) {
    let backslashes = 0;
    while (quote - backslashes - 1 >= from && text.charCodeAt(quote - backslashes - 1) === 0x5c)
      backslashes++;
    if (backslashes % 2 === 0) return quote;
    quote = text.indexOf('"', quote + 1);
  }
  return -1;
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
