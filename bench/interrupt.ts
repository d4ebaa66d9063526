/**
 * What to undo when a benchmark is interrupted (Ctrl-C, SIGTERM): the embedded PostgreSQL runs in a
 * session of its own and would outlive us, as would servers signalled by nobody else.
 */
const undo = new Set<() => Promise<unknown>>();
let installed = false;

/** Registers `action` for an interruption; the returned function unregisters it once done normally. */
export function onInterrupt(action: () => Promise<unknown>): () => void {
  if (!installed) {
    installed = true;
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(signal, () => {
        console.error(`\n${signal}: stopping the benchmark's servers and PostgreSQL`);
        void (async () => {
          for (const action of [...undo].reverse()) await action().catch(() => undefined);
          process.exit(130);
        })();
      });
    }
  }
  undo.add(action);
  return () => undo.delete(action);
}
