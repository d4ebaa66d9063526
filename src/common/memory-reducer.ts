/**
 * The node option every `serve` process is started with: the image's ENTRYPOINT, `make run` and the
 * benchmarks' servers. V8 reads it only when it creates the heap, so it can be set neither from
 * within, as turnOffPretenuring is, nor in NODE_OPTIONS, which refuses it.
 *
 * V8's memory reducer collects when a process goes quiet (a pod without traffic, a paused process)
 * and from then on lets the old generation grow only slowly, to about 1.3 times what is live, until
 * its committed memory is 10 MB above what it was after those collections. Under load a heap kept
 * that small may never get there: a full collection every ~120 ms instead of every ~550 ms, for as
 * long as the process lives. Measured on Node 20 (bench, three `serve` processes measured in turns,
 * each paused while another ran): 73–78 µs of CPU a check in that state, 61–66 µs without the reducer;
 * on Node 26 none of three fell into it in one such try. Without it, an idle process keeps the heap its
 * last busy spell left until its next collection.
 */
export const NO_MEMORY_REDUCER = '--no-memory-reducer';

/** Whether V8's memory reducer is on in a process started with these node options (the last one that names it wins). */
export function memoryReducerOn(execArgv: readonly string[] = process.execArgv): boolean {
  return execArgv.findLast((option) => option === NO_MEMORY_REDUCER || option === '--memory-reducer') !== NO_MEMORY_REDUCER;
}
