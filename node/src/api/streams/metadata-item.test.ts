import { describe, expect, it } from 'vitest';
import { isMetadataItem, metadataFromItem } from './metadata-item.js';

describe('stream metadata item', () => {
  it('recognises only the item shape', () => {
    expect(isMetadataItem({ data: {} })).toBe(true);
    expect(isMetadataItem({ eventId: 'x', eventType: 't', data: { maxAge: 1 } })).toBe(true);
    expect(isMetadataItem({ $maxCount: 3 })).toBe(false);
    expect(isMetadataItem({ data: {}, $maxCount: 3 })).toBe(false);
    expect(isMetadataItem({ data: [1] })).toBe(false);
    expect(isMetadataItem({ data: 'text' })).toBe(false);
  });

  it('maps the spelled-out fields to the system keys and keeps the rest', () => {
    const eventId = '0b9d8f6c-3c62-4a53-9c2a-7d0e5a0c1f11';
    expect(metadataFromItem({
      eventId,
      data: { maxAge: 60, maxCount: 3, truncateBefore: 0, cacheControl: '15', acl: { r: ['a', 'b'], mw: '$admins' }, x: { y: 1 } },
    })).toEqual({
      kind: 'ok',
      eventId,
      metadata: { $maxAge: 60, $maxCount: 3, $tb: 0, $cacheControl: 15, $acl: { $r: ['a', 'b'], $mw: '$admins' }, x: { y: 1 } },
    });
    expect(metadataFromItem({ data: {} })).toEqual({ kind: 'ok', eventId: undefined, metadata: {} });
  });

  it('names the field of a bad value', () => {
    const message = (item: Record<string, unknown>): string => {
      const result = metadataFromItem(item);
      return result.kind === 'invalid' ? result.message : 'valid';
    };
    expect(message({ data: { maxCount: 0 } })).toMatch(/^Invalid stream metadata: data\.maxCount: /);
    expect(message({ data: { maxAge: 1.5 } })).toMatch(/^Invalid stream metadata: data\.maxAge: /);
    expect(message({ data: { cacheControl: 'PT1H' } })).toBe('Invalid stream metadata: data.cacheControl: must be a number of seconds.');
    expect(message({ data: { acl: { r: 5 } } })).toMatch(/^Invalid stream metadata: data\.acl\.r: /);
    expect(message({ data: { acl: { read: 'x' } } })).toMatch(/^Invalid stream metadata: data\.acl: /);
    expect(message({ eventId: 'not-a-uuid', data: {} })).toBe('Invalid stream metadata: eventId must be a UUID.');
  });
});
