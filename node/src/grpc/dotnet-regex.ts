/**
 * Filter expressions of `$all` reads and subscriptions are .NET regular expressions in the
 * original (the server runs them with .NET's Regex, unanchored). JavaScript's RegExp reads most of
 * them alike; this translates the constructs the two spell differently, so that a filter written
 * for the original selects the same names here, and names the construct it cannot take:
 * - leading inline options `(?i)`, `(?m)`, `(?s)`, `(?n)` (any combination) → RegExp flags
 *   (`n`, explicit capture, changes no match);
 * - `\A` → start of input, `\z` → end of input, `\Z` → end or before a final newline (with the m
 *   flag too, where `^` and `$` mean lines);
 * - `(?'name'...)` → `(?<name>...)`; `\k'name'` → `\k<name>`;
 * - `\p{...}` / `\P{...}` turn on the u flag (Unicode categories), as .NET knows them unflagged.
 * Constructs with no RegExp equivalent on this runtime are refused by name rather than read
 * differently: atomic groups `(?>...)`, inline options after the start (`a(?i)b`, `(?i:...)`),
 * conditionals `(?(...)...)`, balancing groups `(?<a-b>...)`, the x option.
 * Pure.
 */

export class DotnetRegexError extends Error {}

const LEADING_OPTIONS = /^\(\?([imsnx]+)\)/;

export function dotnetRegex(pattern: string): RegExp {
  let source = pattern;
  let flags = '';
  const options = LEADING_OPTIONS.exec(source);
  if (options !== null) {
    const letters = options[1] ?? '';
    if (letters.includes('x')) throw new DotnetRegexError('the inline option x (ignore pattern whitespace) is not supported');
    for (const letter of new Set(letters)) if (letter !== 'n') flags += letter;
    source = source.slice(options[0].length);
  }
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i] as string;
    const next = source[i + 1];
    if (c === '\\') {
      if (!inClass && next === 'A') { out += flags.includes('m') ? '(?<![\\s\\S])' : '^'; i++; continue; }
      if (!inClass && next === 'z') { out += flags.includes('m') ? '(?![\\s\\S])' : '$'; i++; continue; }
      if (!inClass && next === 'Z') { out += '(?=\\n?(?![\\s\\S]))'; i++; continue; }
      if (next === 'p' || next === 'P') { if (!flags.includes('u')) flags += 'u'; }
      if (next === 'k' && source[i + 2] === "'") {
        const end = source.indexOf("'", i + 3);
        if (end > 0) { out += `\\k<${source.slice(i + 3, end)}>`; i = end; continue; }
      }
      out += c + (next ?? '');
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      // a ] right after [ or [^ is a literal in .NET
      if (source[i + 1] === '^') { out += '^'; i++; }
      if (source[i + 1] === ']') { out += '\\]'; i++; }
      continue;
    }
    if (c === '(' && next === '?') {
      const rest = source.slice(i + 2);
      if (rest.startsWith('>')) throw new DotnetRegexError('atomic groups (?>...) are not supported');
      if (rest.startsWith('(')) throw new DotnetRegexError('conditional groups (?(...)...) are not supported');
      if (/^[imsnx-]+[:)]/.test(rest)) throw new DotnetRegexError('inline options inside the pattern ((?i:...) or (?i) after its start) are not supported; put them at its start');
      const quoted = /^'([A-Za-z_]\w*)'/.exec(rest);
      if (quoted !== null) { out += `(?<${quoted[1]}>`; i += 1 + quoted[0].length; continue; }
      if (/^<[A-Za-z_]\w*-\w+>/.test(rest) || /^<-\w+>/.test(rest)) throw new DotnetRegexError('balancing groups (?<a-b>...) are not supported');
    }
    out += c;
  }
  try {
    return new RegExp(out, flags);
  } catch (err) {
    throw new DotnetRegexError((err as Error).message);
  }
}
