/**
 * The shipped alert rules (charts/eventdb-operator/files/monitoring/eventdb-rules.yaml) with
 * Prometheus's own promtool: `check rules` (syntax, PromQL, lint) and `test rules` (each alert
 * fires, with its labels and annotations, on the series of test/monitoring/eventdb-rules.test.yaml,
 * and stays silent on a healthy cluster).
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

import { promtool } from '../support/promtool.js';

const ROOT = resolve(import.meta.dirname, '../..');
const RULES = resolve(ROOT, 'charts/eventdb-operator/files/monitoring/eventdb-rules.yaml');
const RULE_TESTS = resolve(ROOT, 'test/monitoring/eventdb-rules.test.yaml');

describe('alert rules (promtool)', () => {
  it('pass promtool check rules', () => {
    const check = promtool(['check', 'rules', RULES]);
    expect(check.output).toMatch(/SUCCESS: 12 rules found/);
    expect(check.status, check.output).toBe(0);
  });

  it('pass promtool test rules', () => {
    const test = promtool(['test', 'rules', RULE_TESTS]);
    expect(test.output).toMatch(/SUCCESS/);
    expect(test.status, test.output).toBe(0);
  });
});
