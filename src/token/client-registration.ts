import type { JSONWebKeySet } from 'jose';
import { isSecureOrLoopbackUrl } from '../config.js';
import { isClientId } from '../common/client-id.js';
import { IssuerMetadataInvalid, issuerRequest, issuerText, type IssuerLimits, ISSUER_LIMITS } from './issuer-http.js';

// RFC 7591 registration and RFC 7592 management: what is sent to the issuer and what is accepted back, no policy.

export type ClientAuthMethod = 'client_secret_basic' | 'private_key_jwt';

/** The partner's public keys, given inline or by URL; none: a secret. */
export type PartnerKeys = { readonly jwks: JSONWebKeySet } | { readonly jwksUri: string } | undefined;

/** RFC 7592 §3: where a registered client is read, changed and deleted, with the token that authorizes it. */
export interface ClientRegistration {
  readonly registrationClientUri: string;
  readonly registrationAccessToken: string;
}

export interface RegisteredClient extends ClientRegistration {
  readonly clientId: string;
  /** Only for client_secret_basic; shown once, never stored. */
  readonly clientSecret: string | undefined;
  readonly authMethod: ClientAuthMethod;
}

// RFC 7592 §2.2: the server's own fields, never sent back in an update.
const SERVER_FIELDS = ['registration_access_token', 'registration_client_uri', 'client_secret_expires_at', 'client_id_issued_at', 'client_secret'];
const MAX_TOKEN = 4096;

export function clientMetadata(clientName: string, keys: PartnerKeys): Record<string, unknown> {
  return {
    client_name: clientName,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: keys === undefined ? 'client_secret_basic' : 'private_key_jwt',
    ...(keys === undefined ? {} : 'jwks' in keys ? { jwks: keys.jwks } : { jwks_uri: keys.jwksUri }),
  };
}

function stringOf(answer: Record<string, unknown> | undefined, name: string, max = MAX_TOKEN): string | undefined {
  const value = answer?.[name];
  return typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;
}

/** Why the registration access token may not go to this URI (another origin than the registration endpoint's). */
export function foreignManagementUri(registrationClientUri: string, registrationEndpoint: string): string | undefined {
  if (!URL.canParse(registrationClientUri)) return `the registration_client_uri is not a URL`;
  const origin = new URL(registrationClientUri).origin;
  const expected = new URL(registrationEndpoint).origin;
  return origin === expected ? undefined : `the registration_client_uri is on ${issuerText(origin)}, not on ${expected} where the issuer's registration_endpoint is`;
}

function managementOf(answer: Record<string, unknown> | undefined): ClientRegistration | undefined {
  const uri = stringOf(answer, 'registration_client_uri', 2048);
  const token = stringOf(answer, 'registration_access_token');
  if (uri === undefined || token === undefined) return undefined;
  return isSecureOrLoopbackUrl(uri) ? { registrationClientUri: uri, registrationAccessToken: token } : undefined;
}

/** RFC 7591 §3.1. An answer the client could not be managed with is refused, the client deleted where it allows. */
export async function registerClient(
  registrationEndpoint: string,
  initialAccessToken: string,
  metadata: Record<string, unknown>,
  limits: IssuerLimits = ISSUER_LIMITS,
): Promise<RegisteredClient> {
  const { json } = await issuerRequest({ method: 'POST', url: registrationEndpoint, bearer: initialAccessToken, body: metadata }, limits);
  const clientId = stringOf(json, 'client_id');
  const management = managementOf(json);
  const requested = metadata['token_endpoint_auth_method'] as ClientAuthMethod;
  const secret = stringOf(json, 'client_secret');
  const foreign = management === undefined ? undefined : foreignManagementUri(management.registrationClientUri, registrationEndpoint);
  const problem =
    clientId === undefined || !isClientId(clientId)
      ? 'no client_id of 1 to 255 visible ASCII characters'
      : management === undefined
        ? 'no registration_client_uri (https) and registration_access_token (RFC 7592), so the client could never be rotated or deleted from here'
        : foreign !== undefined
          ? `${foreign}, where its registration access token will not be sent`
          : json?.['token_endpoint_auth_method'] !== undefined && json['token_endpoint_auth_method'] !== requested
          ? `token_endpoint_auth_method ${issuerText(json['token_endpoint_auth_method'])} instead of the ${requested} asked for`
          : requested === 'client_secret_basic' && secret === undefined
            ? 'no client_secret for a client that authenticates with one'
            : undefined;
  if (problem !== undefined) {
    const deletable = management !== undefined && foreign === undefined;
    if (deletable) await deleteClient(management, limits).catch(() => undefined);
    const left = !deletable && clientId !== undefined ? `; delete client ${issuerText(clientId)} at the issuer by hand` : '';
    throw new IssuerMetadataInvalid(`the issuer's registration answer has ${problem}${left}`);
  }
  return {
    clientId: clientId as string,
    clientSecret: requested === 'client_secret_basic' ? secret : undefined,
    authMethod: requested,
    ...(management as ClientRegistration),
  };
}

export async function deleteClient(registration: ClientRegistration, limits: IssuerLimits = ISSUER_LIMITS): Promise<void> {
  await issuerRequest({ method: 'DELETE', url: registration.registrationClientUri, bearer: registration.registrationAccessToken }, limits);
}

/** The update was sent, then something failed: the issuer may have rotated the secret and the token, or not. */
export class RotationOutcomeUnknown extends Error {
  override readonly name = 'RotationOutcomeUnknown';
  constructor(override readonly cause: unknown) {
    super((cause as Error).message, { cause });
  }
}

export interface UpdatedClient {
  readonly clientSecret: string;
  readonly registrationAccessToken: string;
}

/** RFC 7592: read the configuration (§2.1), send it back without the secret (§2.2), and check a new one came. */
export async function rotateClientSecret(registration: ClientRegistration, clientId: string, limits: IssuerLimits = ISSUER_LIMITS): Promise<UpdatedClient> {
  const read = await issuerRequest({ method: 'GET', url: registration.registrationClientUri, bearer: registration.registrationAccessToken }, limits);
  const current = read.json ?? {};
  if (current['client_id'] !== clientId) throw new IssuerMetadataInvalid(`the issuer's configuration at the registration_client_uri is not client ${clientId}'s`);
  const previousSecret = stringOf(current, 'client_secret');
  const update: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(current)) if (!SERVER_FIELDS.includes(name)) update[name] = value;
  // The token that authorized the read may have been rotated by it; the update uses what the read answered.
  const bearer = stringOf(current, 'registration_access_token') ?? registration.registrationAccessToken;
  let json: Record<string, unknown> | undefined;
  try {
    ({ json } = await issuerRequest({ method: 'PUT', url: registration.registrationClientUri, bearer, body: update }, limits));
  } catch (error) {
    throw new RotationOutcomeUnknown(error);
  }
  const clientSecret = stringOf(json, 'client_secret');
  if (clientSecret === undefined) throw new RotationOutcomeUnknown(new IssuerMetadataInvalid("the issuer's answer to the update has no client_secret"));
  if (clientSecret === previousSecret) {
    throw new IssuerMetadataInvalid(
      'the issuer kept the client secret on update (RFC 7592 lets it choose): rotate the secret at the issuer by hand, or create a new client for the site and remove this one',
    );
  }
  return { clientSecret, registrationAccessToken: stringOf(json, 'registration_access_token') ?? bearer };
}
