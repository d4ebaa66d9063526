import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { UsageError } from './arguments.js';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

const NAME_YOURSELF = 'name yourself for the audit log: --actor alice@example.com, or set SITEKEY_ACTOR=alice@example.com';

export interface RunningAccount {
  readonly user: string;
  readonly uid: number | undefined;
  readonly inKubernetesPod: boolean;
}

export function runningAccount(kubernetesServiceHost: boolean, serviceAccountMounted: () => boolean = () => existsSync(SERVICE_ACCOUNT_DIR)): RunningAccount {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // A uid without a passwd entry, as in many images: nobody's name either way.
  }
  return { user, uid: process.getuid?.(), inKubernetesPod: kubernetesServiceHost || serviceAccountMounted() };
}

function sharedAccount(account: RunningAccount): string | undefined {
  if (account.inKubernetesPod) return `in a Kubernetes pod as its user ${account.user}`;
  if (account.uid === 0) return 'as root';
  return undefined;
}

/**
 * The name the audit log gives a command's changes: the one given, else the OS user; a change made as
 * root or in a pod without a name is refused, since the log would say "root" or "node" of everyone.
 */
export function actorFor(named: string | undefined, account: RunningAccount, changes: boolean): string {
  const shared = sharedAccount(account);
  if (named !== undefined) {
    // Naming the shared account itself ("root", the pod's user) names nobody either.
    if (changes && shared !== undefined && named.trim().toLowerCase() === account.user.toLowerCase()) {
      throw new UsageError(`this command makes a change, and runs ${shared}; "${named}" is that account, which names nobody: ${NAME_YOURSELF}`);
    }
    return named;
  }
  if (changes && shared !== undefined) throw new UsageError(`this command makes a change, and runs ${shared}, which names nobody; ${NAME_YOURSELF}`);
  return account.user;
}
