import type { Logger } from '../observe/logger.js';

// oidc-provider writes its notices with console.info and console.warn; while an issuer runs they go to its
// logger. One is expected, at debug: issuer-http.ts reads the token endpoint's body before the provider does.

const PROVIDER_NOTICE = /^(?:\x1b\[[\d;]*m)?oidc-provider (NOTICE|WARNING): (.*?)(?:\x1b\[0m)?$/s;
const EXPECTED = /already parsed request body detected/;

const routedTo: Logger[] = [];
let restore: (() => void) | undefined;

function route(write: (...args: unknown[]) => void) {
  return (...args: unknown[]): void => {
    const match = typeof args[0] === 'string' ? PROVIDER_NOTICE.exec(args[0]) : null;
    const logger = routedTo.at(-1);
    if (match === null || logger === undefined) return write.apply(console, args);
    const [, kind, text = ''] = match;
    if (EXPECTED.test(text)) logger.debug({ component: 'oidc-provider' }, text);
    else if (kind === 'WARNING') logger.warn({ component: 'oidc-provider' }, text);
    else logger.info({ component: 'oidc-provider' }, text);
  };
}

/** Until the returned function is called. */
export function routeProviderNotices(logger: Logger): () => void {
  if (restore === undefined) {
    const { info, warn } = console;
    console.info = route(info);
    console.warn = route(warn);
    restore = () => {
      console.info = info;
      console.warn = warn;
    };
  }
  routedTo.push(logger);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    routedTo.splice(routedTo.lastIndexOf(logger), 1);
    if (routedTo.length === 0) {
      restore?.();
      restore = undefined;
    }
  };
}
