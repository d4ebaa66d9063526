import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { isRegistrationToken } from './issuer-config.js';

export interface TrialRegistrationToken {
  readonly token: string;
  /** Made by this start: the one time it is printed without being asked for. */
  readonly madeNow: boolean;
}

// Kept in the database so that every start on it takes the same one: serve seals each client's registration access
// token with a key derived from it. Two issuers starting at once agree on one.
export async function trialRegistrationToken(sql: pg.Pool): Promise<TrialRegistrationToken> {
  const made = await sql.query(
    'INSERT INTO issuer_trial_registration_token (token) VALUES ($1) ON CONFLICT (only_row) DO NOTHING',
    [randomBytes(32).toString('base64url')],
  );
  const { rows } = await sql.query<{ token: string }>('SELECT token FROM issuer_trial_registration_token');
  const token = rows[0]?.token;
  if (token === undefined) throw new Error('issuer_trial_registration_token has no row right after one was written');
  // Printed and compared with what registration sends: a row changed by hand must still be a token.
  if (!isRegistrationToken(token)) {
    throw new Error('the registration token kept in issuer_trial_registration_token is not one (changed by hand?): delete that row to have a new one made, or set ISSUER_REGISTRATION_TOKEN');
  }
  return { token, madeNow: made.rowCount === 1 };
}
