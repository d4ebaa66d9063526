import type { Config } from '../config.js';
import type { CredentialAdmin } from '../store/credential-admin.js';

/** What every operation is carried out with: the store opened as the person who asks (its audit rows name them). */
export interface OperationContext {
  readonly admin: CredentialAdmin;
  readonly config: Config;
  readonly now: number;
}

export interface Changed<T> {
  readonly result: T;
  readonly warnings: string[];
}
