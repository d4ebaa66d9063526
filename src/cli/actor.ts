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

/** The name given, else the OS user; a change as root or in a pod must name someone, or the log says "root" of all. */
export function actorFor(named: string | undefined, account: RunningAccount, changes: boolean): string {
  const inPod = account.inKubernetesPod ? `in a Kubernetes pod as its user ${account.user}` : undefined;
  const shared = inPod ?? (account.uid === 0 ? 'as root' : undefined);
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
