// A vitest reporter that writes the run's outcome in a few lines to .local/test-outcome.txt: every failed test
// (file, name, first lines of its error), every test that passed only on a retry (flaky: a bug to chase, not a
// pass to forget), and module-level errors. The Makefile prints the file after vitest exits, so the outcome is the
// last thing a CI log shows, after the k8s tier's teardown output.
import fs from 'node:fs';
import path from 'node:path';
import type { Reporter, SerializedError, TestCase, TestModule } from 'vitest/node';

const errorLines = 12;

function firstLines(text: string | undefined, count: number): string {
  return (text ?? '').split('\n').slice(0, count).map((l) => `      ${l}`).join('\n');
}

function describeError(e: { message?: string; stack?: string } | undefined): string {
  if (!e) return '      (no error recorded)';
  return firstLines(e.stack ?? e.message, errorLines);
}

export default class OutcomeReporter implements Reporter {
  // vitest passes reporter options to the constructor: the file is fixed, next to the other run state
  private readonly file = path.resolve('.local/test-outcome.txt');

  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    const failed: string[] = [];
    const flaky: string[] = [];
    const moduleErrors: string[] = [];
    let passed = 0;
    for (const module of testModules) {
      for (const e of module.errors()) moduleErrors.push(`  ${module.relativeModuleId}\n${describeError(e)}`);
      // A failed beforeAll/afterAll fails its suite, and its tests are then not run at all: a
      // failure to show, though no test of it says failed.
      for (const suite of module.children.allSuites()) {
        const errors = suite.errors();
        if (suite.state() === 'failed' && errors.length > 0) failed.push(`  [${suite.project.name}] ${module.relativeModuleId} > ${suite.fullName} (a hook of the suite)\n${describeError(errors[0])}`);
      }
      for (const test of module.children.allTests()) {
        const result = test.result();
        const where = `  [${test.project.name}] ${module.relativeModuleId} > ${test.fullName}`;
        if (result.state === 'failed') failed.push(`${where}\n${describeError(result.errors?.[0])}`);
        else if (result.state === 'passed') {
          passed++;
          if (retried(test)) flaky.push(`${where} (passed after ${test.diagnostic()?.retryCount} retry)`);
        }
      }
    }
    const lines = [`test outcome: ${passed} passed, ${failed.length} failed, ${flaky.length} passed only on a retry`];
    if (failed.length > 0) lines.push('FAILED:', ...failed);
    if (flaky.length > 0) lines.push('PASSED ONLY ON A RETRY (flaky):', ...flaky);
    if (moduleErrors.length > 0) lines.push('ERRORS OUTSIDE TESTS:', ...moduleErrors);
    if (unhandledErrors.length > 0) lines.push('UNHANDLED ERRORS:', ...unhandledErrors.map((e) => describeError(e)));
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    fs.writeFileSync(this.file, `${lines.join('\n')}\n`);
  }
}

function retried(test: TestCase): boolean {
  const d = test.diagnostic();
  return d !== undefined && d.retryCount > 0;
}
