import { hkdfSync } from 'node:crypto';
import { openBox, sealBox } from '../common/sealed-box.js';

// AES-256-GCM under a key derived (HKDF) from the initial access token, bound to the client id and the
// registration_client_uri so that it can neither move rows nor be aimed elsewhere. Layout: version | IV | tag | text.

const VERSION = 1;
const SALT = Buffer.from('sitekey-authz registration access token', 'utf8');

export class SealUnreadable extends Error {
  override readonly name = 'SealUnreadable';
  constructor(
    message: string,
    /** Changed or damaged, not merely sealed under another key: the client is replaced. */
    readonly altered = false,
  ) {
    super(message);
  }
}

// A client id is visible ASCII (no newline), so the pair cannot be read two ways.
const boundTo = (clientId: string, registrationClientUri: string): Buffer => Buffer.from(`${clientId}\n${registrationClientUri}`, 'utf8');

export class RegistrationSeal {
  readonly keyId: string;
  readonly #key: Buffer;

  constructor(initialAccessToken: string) {
    this.#key = Buffer.from(hkdfSync('sha256', initialAccessToken, SALT, 'seal key v1', 32));
    this.keyId = Buffer.from(hkdfSync('sha256', initialAccessToken, SALT, 'seal key id v1', 8)).toString('hex');
  }

  seal(plain: string, clientId: string, registrationClientUri: string): Buffer {
    return Buffer.concat([Buffer.from([VERSION]), sealBox(this.#key, Buffer.from(plain, 'utf8'), boundTo(clientId, registrationClientUri))]);
  }

  open(sealed: Buffer, keyId: string, clientId: string, registrationClientUri: string): string {
    if (keyId !== this.keyId) {
      throw new SealUnreadable(
        `the registration access token of client ${clientId} was sealed with another TOKEN_REGISTRATION_TOKEN (key ${keyId}, now ${this.keyId}): ` +
          'set TOKEN_REGISTRATION_TOKEN back to the initial access token in use when the client was created, or manage the client at the issuer by hand',
      );
    }
    if (sealed.length <= 1 || sealed[0] !== VERSION) {
      throw new SealUnreadable(`the stored registration access token of client ${clientId} is damaged: delete the client at the issuer by hand and replace it`, true);
    }
    const plain = openBox(this.#key, sealed.subarray(1), boundTo(clientId, registrationClientUri));
    if (plain === undefined) {
      throw new SealUnreadable(
        `the stored registration of client ${clientId} was altered (its registration_client_uri or sealed token is not what was stored when it was created, ` +
          'or was moved from another client) or is damaged: the token is not sent anywhere. Check who changed the token_clients row; ' +
          'delete the client at the issuer by hand and replace it',
        true,
      );
    }
    return plain.toString('utf8');
  }
}
