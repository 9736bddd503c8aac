/**
 * A reconcile as a straight list of short, named steps (CloudNativePG's shape). Each step reads
 * and changes the reconcile's state and says whether the next one may run. `runSteps` runs them
 * in order until one says 'stop'. When a step throws, `onError` records the failure (in the
 * object's status) and the error goes on to the work queue, which retries with back-off.
 */
import type { Logger } from 'pino';

export type StepOutcome = 'continue' | 'stop';

export interface Step<S> {
  readonly name: string;
  readonly run: (state: S) => Promise<StepOutcome>;
}

export async function runSteps<S>(
  steps: readonly Step<S>[],
  state: S,
  options: { readonly log: Logger; readonly onError: (err: unknown) => Promise<void> },
): Promise<void> {
  try {
    for (const step of steps) {
      if ((await step.run(state)) === 'stop') {
        options.log.debug({ step: step.name }, 'reconcile stopped at step');
        return;
      }
    }
  } catch (err: unknown) {
    await options.onError(err);
    throw err;
  }
}
