/**
 * Finds keys that occur twice in one JSON object (JSON.parse silently keeps the last one), for
 * tests that read the node's log lines. A small recursive-descent walk over valid JSON.
 */
export function duplicateJsonKeys(text: string): string[] {
  const duplicates: string[] = [];
  let at = 0;
  const skipSpace = (): void => {
    while (/\s/.test(text[at] ?? '')) at++;
  };
  const readString = (): string => {
    const start = at;
    at++; // opening quote
    while (text[at] !== '"') at += text[at] === '\\' ? 2 : 1;
    at++;
    return JSON.parse(text.slice(start, at)) as string;
  };
  const readValue = (path: string): void => {
    skipSpace();
    const c = text[at];
    if (c === '{') {
      at++;
      const seen = new Set<string>();
      skipSpace();
      while (text[at] !== '}') {
        skipSpace();
        const key = readString();
        if (seen.has(key)) duplicates.push(`${path}${key}`);
        seen.add(key);
        skipSpace();
        at++; // colon
        readValue(`${path}${key}.`);
        skipSpace();
        if (text[at] === ',') at++;
        skipSpace();
      }
      at++;
    } else if (c === '[') {
      at++;
      skipSpace();
      while (text[at] !== ']') {
        readValue(path);
        skipSpace();
        if (text[at] === ',') at++;
        skipSpace();
      }
      at++;
    } else if (c === '"') {
      readString();
    } else {
      while (at < text.length && !/[,}\]\s]/.test(text[at] ?? '')) at++;
    }
  };
  JSON.parse(text); // valid JSON only
  readValue('');
  return duplicates;
}
