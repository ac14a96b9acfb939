/**
 * A cheap sink for the one-line-per-request log: lines written during one turn of the event loop
 * are joined and handed to process.stdout in one write on setImmediate (stdout to a file or a
 * pipe is a synchronous syscall per write in Node), and whatever is pending is written
 * synchronously when the process exits or the server stops. Order of lines is kept.
 */
export interface LineSink {
  (line: string): void;
  /** Writes pending lines now. */
  flush(): void;
}

const sinks = new Set<LineSink>();
let exitHook = false;

export function batchedSink(out: () => { write(s: string): unknown }): LineSink {
  let pending: string[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const text = pending.length === 1 ? pending[0]! : pending.join('');
    pending = [];
    out().write(text);
  };
  const sink = ((line: string) => {
    pending.push(line);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  }) as LineSink;
  sink.flush = flush;
  sinks.add(sink);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => { for (const s of sinks) s.flush(); });
  }
  return sink;
}

let stdoutSink: LineSink | undefined;

/** The process-wide batched stdout sink (process.stdout is looked up at each write). */
export function batchedStdout(): LineSink {
  stdoutSink ??= batchedSink(() => process.stdout);
  return stdoutSink;
}
