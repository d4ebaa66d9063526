import type { Logger } from '../observe/logger.js';

/** What a process has opened, closed once in reverse order; a closer that fails is logged and the rest still run. */
export class Resources {
  private readonly closers: Array<() => Promise<unknown>> = [];
  private closing: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  add<T>(resource: T, close: (resource: T) => Promise<unknown>): T {
    this.closers.push(() => close(resource));
    return resource;
  }

  close(): Promise<void> {
    return (this.closing ??= this.closeAll());
  }

  private async closeAll(): Promise<void> {
    for (const close of this.closers.reverse()) {
      await close().catch((error: unknown) => this.logger.warn({ err: error }, 'closing a resource during shutdown failed'));
    }
  }
}
