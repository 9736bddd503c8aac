import { describe, expect, it } from 'vitest';
import { DotnetRegexError, dotnetRegex } from './dotnet-regex.js';

const matches = (pattern: string, names: readonly string[]): string[] => names.filter((name) => dotnetRegex(pattern).test(name));

describe('dotnetRegex: a .NET filter expression as the original matches it', () => {
  it('plain patterns match unanchored, as Regex.IsMatch does', () => {
    expect(matches('^order-', ['order-1', 'orders-1', 'my-order-1'])).toEqual(['order-1']);
    expect(matches('order', ['order-1', 'my-order-1', 'cart'])).toEqual(['order-1', 'my-order-1']);
    expect(matches('^[^$]', ['$ce-x', 'x', '$$x'])).toEqual(['x']);
  });

  it('leading inline options become flags', () => {
    expect(matches('(?i)^ORDER', ['order-1', 'Order-2', 'cart'])).toEqual(['order-1', 'Order-2']);
    expect(matches('(?in)^(ORDER)', ['order-1'])).toEqual(['order-1']);
    expect(dotnetRegex('(?is)a.b').flags).toBe('is');
  });

  it('\\A, \\z and \\Z anchor the whole name', () => {
    expect(matches('\\Aorder\\z', ['order', 'order\n', 'an order'])).toEqual(['order']);
    expect(matches('\\Aorder\\Z', ['order', 'order\n', 'order\n\n'])).toEqual(['order', 'order\n']);
    expect(matches('(?m)\\Aorder\\z', ['order', 'x\norder'])).toEqual(['order']);
  });

  it("(?'name'...) and \\k'name' are named groups; \\p{..} categories turn on Unicode", () => {
    expect(matches("^(?'kind'[a-z]+)-\\k'kind'$", ['ab-ab', 'ab-cd'])).toEqual(['ab-ab']);
    expect(matches('^\\p{Lu}', ['Émile', 'émile'])).toEqual(['Émile']);
  });

  it('a ] first in a class is a literal, as in .NET', () => {
    expect(matches('[]a]', [']', 'a', 'b'])).toEqual([']', 'a']);
    expect(matches('^[^]]', [']x', 'x'])).toEqual(['x']);
  });

  it('constructs RegExp cannot express are refused by name', () => {
    expect(() => dotnetRegex('(?>a+)b')).toThrow(new DotnetRegexError('atomic groups (?>...) are not supported'));
    expect(() => dotnetRegex('a(?i)b')).toThrow(DotnetRegexError);
    expect(() => dotnetRegex('(?i:a)b')).toThrow(/inline options inside the pattern/);
    expect(() => dotnetRegex('(?(a)b|c)')).toThrow(/conditional groups/);
    expect(() => dotnetRegex('(?<a-b>x)')).toThrow(/balancing groups/);
    expect(() => dotnetRegex('(?x) a b')).toThrow(/inline option x/);
    expect(() => dotnetRegex('(unclosed')).toThrow(DotnetRegexError);
  });
});
