/**
 * The body of a projection's worker thread. Like the in-context API (sandbox-api.ts) it is
 * started from its source text (`new Worker(code, { eval: true })`), so it must be
 * self-contained: it works the same from the TypeScript sources (unit tests) and from dist/.
 *
 * The thread owns one vm context, created with a null-prototype global (so `this.constructor`
 * leads nowhere in this realm), code generation from strings and WebAssembly disabled, and its
 * own microtask queue (`afterEvaluate`: promise jobs a projection queues from a handler never run
 * on this thread's queue, outside the watchdog). Only primitives cross into the context.
 *
 * Execution is watched from the main thread through a shared Int32Array: [0] = 1 while user code
 * runs, [1] counts the calls into user code; the main thread terminates the thread when the
 * count stays put for longer than the execution timeout (js-runtime.ts). The source itself is
 * compiled and run under vm's own timeout (the compilation timeout).
 */

/* eslint-disable */
export function sandboxWorkerMain(): void {
  // Eval workers run as CommonJS scripts: require is the only way in.
  // @ts-ignore -- `require` exists in an eval worker
  const { parentPort, workerData } = require('node:worker_threads');
  // @ts-ignore
  const vm = require('node:vm');
  const BUSY = 0;
  const CALLS = 1;
  const control = new Int32Array(workerData.control);
  const context = vm.createContext(Object.create(null), {
    name: 'projection',
    codeGeneration: { strings: false, wasm: false },
    microtaskMode: 'afterEvaluate',
  });
  vm.runInContext(`(${workerData.apiSource})()`, context, { filename: 'projection-api.js' });
  const api = vm.runInContext('__edb', context);
  vm.runInContext('delete globalThis.__edb', context);

  function describe(err: any): { message: string; stack: string; code?: string } {
    try {
      if (err !== null && typeof err === 'object' && 'message' in err) {
        const message = String(err.message);
        const stack = typeof err.stack === 'string' ? err.stack : message;
        const code = typeof err.code === 'string' ? err.code : undefined;
        return { message, stack, code };
      }
      return { message: String(err), stack: String(err) };
    } catch {
      return { message: 'Unknown error', stack: 'Unknown error' };
    }
  }

  function enter(): void {
    Atomics.add(control, CALLS, 1);
    Atomics.store(control, BUSY, 1);
  }

  function leave(): void {
    Atomics.store(control, BUSY, 0);
  }

  function tick(): void {
    Atomics.add(control, CALLS, 1);
  }

  function call(fn: () => any): any {
    enter();
    try {
      return fn();
    } finally {
      leave();
    }
  }

  /** A failure of user code, already described (host-realm object). */
  class Failure {
    constructor(
      readonly message: string,
      readonly stack: string,
      readonly code: string | undefined,
      readonly index?: number,
      readonly outputs?: Array<[number, string]>,
    ) {}
  }

  function fault(err: any, index?: number, outputs?: Array<[number, string]>): Failure {
    const info = describe(err);
    return new Failure(info.message, info.stack, info.code, index, outputs);
  }

  function logs(): string | undefined {
    const text = api.takeLogs();
    return text === '' ? undefined : text;
  }

  const ops: any = {
    compile(message: any) {
      const script = new vm.Script(message.source, { filename: 'projection.js' });
      Atomics.add(control, CALLS, 1);
      script.runInContext(context, { timeout: message.compileTimeoutMs });
      const definition = api.definition();
      api.startExecution();
      return definition;
    },
    partitions(message: any) {
      const out: Array<string | null> = [];
      enter();
      try {
        for (const ev of message.events) {
          tick();
          out.push(api.partitionOf(ev[0], ev[1], ev[2], ev[3], ev[4], ev[5], ev[6], ev[7], ev[8]));
        }
      } catch (err) {
        const failure = fault(err, out.length);
        leave();
        throw failure;
      }
      leave();
      return out;
    },
    process(message: any) {
      const outputs: Array<[number, string]> = [];
      const events = message.events;
      const partitions = message.partitions;
      let index = 0;
      enter();
      try {
        for (; index < events.length; index++) {
          tick();
          const ev = events[index];
          const out = ev[9] === 1
            ? api.deleted(partitions[index], ev[10] === 1)
            : api.process(partitions[index], ev[0], ev[1], ev[2], ev[3], ev[4], ev[5], ev[6], ev[7], ev[8]);
          if (out !== '') outputs.push([index, out]);
        }
      } catch (err) {
        const failure = fault(err, index, outputs);
        leave();
        throw failure;
      }
      leave();
      return outputs;
    },
    load(message: any) {
      call(() => {
        for (const [partition, state, result] of message.states) api.loadState(partition, state, result);
        if (message.shared !== undefined) api.loadShared(message.shared);
      });
      return null;
    },
    unload(message: any) {
      for (const partition of message.partitions) api.unload(partition);
      return api.partitionCount();
    },
    state(message: any) {
      return call(() => api.stateOf(message.partition));
    },
    result(message: any) {
      return call(() => api.resultOf(message.partition));
    },
    shared() {
      return call(() => api.sharedOf());
    },
    dirty() {
      return call(() => api.takeDirty());
    },
    results() {
      return call(() => api.allResults());
    },
  };

  parentPort.on('message', (message: any) => {
    let reply: any;
    try {
      const op = ops[message.op];
      if (op === undefined) throw new Error(`unknown operation ${message.op}`);
      const value = op(message);
      reply = { id: message.id, ok: true, value, logs: logs() };
    } catch (err: any) {
      // An error from user code may have getters (or be a proxy): read it under the watchdog.
      const info: Failure = call(() => (err instanceof Failure ? err : fault(err)));
      reply = {
        id: message.id, ok: false, error: { message: info.message, stack: info.stack, code: info.code },
        index: info.index, outputs: info.outputs, logs: logs(),
      };
    }
    parentPort.postMessage(reply);
  });
}
