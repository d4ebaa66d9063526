type ProviderModule = typeof import('oidc-provider');

/**
 * oidc-provider writes notices meant for a production deployment straight to the console (an
 * unsupported Node.js line, the in-memory store it keeps). In tests they are noise; any other console
 * output passes through.
 */
const PROVIDER_NOTICE = /^(\x1b\[[\d;]*m)?oidc-provider (NOTICE|WARNING): /;

function muteProviderNotices(): () => void {
  const { info, warn } = console;
  const filtered =
    (write: (...args: unknown[]) => void) =>
    (...args: unknown[]): void => {
      if (typeof args[0] === 'string' && PROVIDER_NOTICE.test(args[0])) return;
      write.apply(console, args);
    };
  console.info = filtered(info);
  console.warn = filtered(warn);
  return () => {
    console.info = info;
    console.warn = warn;
  };
}

/** `work` (making a Provider, say) without the provider's notices. */
export function withoutProviderNotices<T>(work: () => T): T {
  const unmute = muteProviderNotices();
  try {
    return work();
  } finally {
    unmute();
  }
}

/** Loaded once per process: the module prints its runtime notice while it is evaluated. */
let providerModule: Promise<ProviderModule> | undefined;
export function loadProviderModule(): Promise<ProviderModule> {
  if (!providerModule) {
    const unmute = muteProviderNotices();
    providerModule = import('oidc-provider').finally(unmute);
  }
  return providerModule;
}
