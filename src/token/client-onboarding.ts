import type { Config } from '../config.js';
import type { ClientId, SiteId } from '../decision/types.js';
import { configuredSunsetPolicy } from '../store/sunset-policy.js';
import { AdminError, type AdminNextStep } from '../store/admin-transactions.js';
import type { CredentialAdmin } from '../store/credential-admin.js';
import type { StoredRegistration, TokenClientSummary } from '../store/token-admin.js';
import {
  clientMetadata,
  deleteClient,
  foreignManagementUri,
  registerClient,
  rotateClientSecret,
  RotationOutcomeUnknown,
  type ClientRegistration,
  type PartnerKeys,
  type RegisteredClient,
  type UpdatedClient,
} from './client-registration.js';
import { discoverIssuer, IssuerMetadataInvalid, IssuerRefused, IssuerUnreachable } from './issuer-http.js';
import { ISSUER_LIMITS, type IssuerLimits, type IssuerMetadata } from './issuer-http.js';
import { RegistrationSeal, SealUnreadable } from './registration-seal.js';

/** What the account manager sends the partner; the names are the JSON the CLI and API print. */
export interface Handover {
  readonly client_id: string;
  readonly client_secret?: string;
  readonly token_endpoint: string;
  /** The resource indicator (RFC 8707) to request tokens for: TOKEN_AUDIENCE. */
  readonly resource: string;
  readonly guide_url: string | null;
}

export interface NewPartnerClient {
  readonly siteId: SiteId;
  readonly note: string;
  readonly keys: PartnerKeys;
}

type Onboarded = { readonly handover: Handover; readonly client: TokenClientSummary };

interface RegistrationSettings {
  readonly issuer: string;
  readonly initialAccessToken: string;
}

const REGISTRATION_OFF_HELP =
  'set TOKEN_REGISTRATION_TOKEN (or TOKEN_REGISTRATION_TOKEN_FILE) to the initial access token of the issuer named by TOKEN_ISSUER; ' +
  'for an issuer without dynamic client registration, create the client there and register it here by its client id';
const REGISTRATION_OFF_CLI = { cliStep: 'register a client made at the issuer with `sitekey-authz token-client add <site-id> <client-id>`' };

// Under the admin port's 30 s socket time-out, so that an answer carrying a new secret is never cut off.
const OPERATION_DEADLINE_MS = 20_000;

const ROTATION_UNKNOWN = 'the outcome is unknown: the issuer may have rotated the secret, and the old one may no longer work. To replace the client';

function issuerError(what: string, error: unknown, consequence: string, nextStep?: AdminNextStep): unknown {
  if (error instanceof IssuerRefused) {
    const hint = error.status === 401 && what.startsWith('register') ? ' (check TOKEN_REGISTRATION_TOKEN: the issuer does not accept it as an initial access token)' : '';
    return new AdminError('ISSUER_REFUSED', `the issuer refused to ${what}: ${error.message}${hint}; ${consequence}`, nextStep);
  }
  if (error instanceof IssuerUnreachable) return new AdminError('ISSUER_UNREACHABLE', `the issuer gave no usable answer to ${what}: ${error.message}; ${consequence}`, nextStep);
  if (error instanceof IssuerMetadataInvalid) return new AdminError('ISSUER_ANSWER_UNUSABLE', `the issuer's answer to ${what} cannot be used: ${error.message}; ${consequence}`, nextStep);
  return error;
}

/** Replace a client that cannot be managed from here: a new one for its site, this one removed here only. */
const replaceClient = (client: TokenClientSummary): AdminNextStep => ({ removeHereOnly: client.clientId, createClientFor: client.siteId });

/**
 * A partner's OAuth client created, rotated and removed at the issuer and here in one step. A failure half-way
 * leaves both sides as they were; the registration access token is stored sealed, the client secret never.
 */
export class ClientOnboarding {
  constructor(
    private readonly admin: CredentialAdmin,
    private readonly config: Config,
    private readonly limits: IssuerLimits = ISSUER_LIMITS,
    private readonly deadlineMs = OPERATION_DEADLINE_MS,
  ) {}

  private operationLimits(): IssuerLimits {
    return { ...this.limits, deadline: AbortSignal.timeout(this.deadlineMs) };
  }

  /** RFC 7591 at the issuer, then one transaction here; undone at the issuer when the transaction fails. */
  async create(request: NewPartnerClient): Promise<Onboarded> {
    const settings = this.settings();
    const limits = this.operationLimits();
    const guideUrl = await this.guideUrl();
    let metadata: IssuerMetadata;
    let registered: RegisteredClient;
    try {
      metadata = await discoverIssuer(settings.issuer, limits);
      if (metadata.registrationEndpoint === undefined) {
        throw new AdminError('REGISTRATION_OFF', `the issuer ${settings.issuer} offers no dynamic client registration (its discovery document has no registration_endpoint); ${REGISTRATION_OFF_HELP}`, undefined, REGISTRATION_OFF_CLI);
      }
      const name = `Partner API, site ${request.siteId}${request.note === '' ? '' : ` (${request.note})`}`;
      registered = await registerClient(metadata.registrationEndpoint, settings.initialAccessToken, clientMetadata(name, request.keys), limits);
    } catch (error) {
      throw issuerError('register the client', error, 'nothing was stored');
    }
    const seal = new RegistrationSeal(settings.initialAccessToken);
    const stored: StoredRegistration = {
      authMethod: registered.authMethod,
      registrationClientUri: registered.registrationClientUri,
      sealedToken: seal.seal(registered.registrationAccessToken, registered.clientId, registered.registrationClientUri),
      keyId: seal.keyId,
    };
    let client: TokenClientSummary;
    try {
      client = await this.admin.tokens.addRegisteredClient(request.siteId, registered.clientId, request.note, stored);
    } catch (error) {
      throw await this.undoRegistration(registered, error, limits);
    }
    return { handover: this.handover(metadata, registered.clientId, registered.clientSecret, guideUrl), client };
  }

  /** A new secret at the issuer (RFC 7592 update); the old one stops working there. */
  async rotateSecret(clientId: ClientId): Promise<Onboarded> {
    const settings = this.settings();
    const { client: current, registration } = await this.admin.tokens.clientWithRegistration(clientId);
    const { stored, atIssuer, seal } = this.managed(current, settings, registration);
    if (stored.authMethod !== 'client_secret_basic') {
      throw new AdminError('TOKEN_CLIENT_NOT_MANAGED', `token client ${clientId} authenticates with the partner's own keys (private_key_jwt): it has no secret to rotate; the partner rotates their keys`);
    }
    const limits = this.operationLimits();
    const guideUrl = await this.guideUrl();
    const what = `give client ${clientId} a new secret`;
    let metadata: IssuerMetadata;
    let updated: UpdatedClient;
    try {
      metadata = await this.managingIssuer(settings, current, atIssuer, limits);
      updated = await rotateClientSecret(atIssuer, clientId, limits);
    } catch (error) {
      // Until the update is sent nothing has changed at the issuer; once it is, anything may have.
      if (error instanceof RotationOutcomeUnknown) throw issuerError(what, error.cause, ROTATION_UNKNOWN, replaceClient(current));
      throw issuerError(what, error, 'the secret it has still works');
    }
    let client: TokenClientSummary;
    try {
      const sealed = seal.seal(updated.registrationAccessToken, clientId, stored.registrationClientUri);
      client = await this.admin.tokens.recordSecretRotation(clientId, sealed, seal.keyId);
    } catch (error) {
      throw new Error(
        `the issuer gave client ${clientId} a new secret, but recording it here failed (${(error as Error).message}); the old secret no longer works. ` +
          'Give it a new secret again once the database answers; if the issuer then refuses the registration access token, remove the client here only (local-only) and create a new one',
        { cause: error },
      );
    }
    return { handover: this.handover(metadata, clientId, updated.clientSecret, guideUrl), client };
  }

  /** At the issuer too, for a client created here, unless `localOnly`. */
  async remove(clientId: ClientId, localOnly: boolean): Promise<{ readonly client: TokenClientSummary; readonly deletedAtIssuer: boolean }> {
    const { client: current, registration } = await this.admin.tokens.clientWithRegistration(clientId);
    if (registration === undefined || localOnly) return { client: await this.admin.tokens.removeClient(clientId), deletedAtIssuer: false };
    const settings = this.settings(' (or remove it here only with local-only, then delete it at the issuer by hand)');
    const { atIssuer } = this.managed(current, settings, registration);
    const limits = this.operationLimits();
    try {
      await this.managingIssuer(settings, current, atIssuer, limits);
      await deleteClient(atIssuer, limits);
    } catch (error) {
      // A 404 says nothing is left to delete. RFC 7592 §2.3 answers 401 for a client that is gone, but also
      // for a wrong token: not proof, so it is said, not assumed.
      if (!(error instanceof IssuerRefused && error.status === 404)) {
        const consequence =
          error instanceof IssuerRefused && error.status === 401
            ? 'the client was not removed here; it may already be deleted at the issuer (its registration access token ends with it, as after a removal whose database step failed), ' +
              'or the issuer refuses the token for another reason: then delete it there by hand as well. Either way'
            : 'the client was not removed, here or there. To remove it here only (then delete it at the issuer by hand)';
        throw issuerError(`delete client ${clientId}`, error, consequence, { removeHereOnly: clientId });
      }
    }
    return { client: await this.admin.tokens.removeClient(clientId, true), deletedAtIssuer: true };
  }

  private settings(extra = ''): RegistrationSettings {
    const tokens = this.config.tokens;
    if (tokens === undefined || tokens.registrationToken === undefined) throw new AdminError('REGISTRATION_OFF', `registering clients at the issuer is off: ${REGISTRATION_OFF_HELP}${extra}`, undefined, REGISTRATION_OFF_CLI);
    return { issuer: tokens.issuer, initialAccessToken: tokens.registrationToken };
  }

  private async guideUrl(): Promise<string | null> {
    return (await this.admin.sunset.policy(configuredSunsetPolicy(this.config))).guideUrl;
  }

  private handover(metadata: IssuerMetadata, clientId: string, clientSecret: string | undefined, guideUrl: string | null): Handover {
    const resource = this.config.tokens?.audience ?? '';
    return { client_id: clientId, ...(clientSecret === undefined ? {} : { client_secret: clientSecret }), token_endpoint: metadata.tokenEndpoint, resource, guide_url: guideUrl };
  }

  private managed(client: TokenClientSummary, settings: RegistrationSettings, registration: StoredRegistration | undefined) {
    const clientId = client.clientId;
    if (registration === undefined) {
      throw new AdminError('TOKEN_CLIENT_NOT_MANAGED', `token client ${clientId} was not created by this service (it was added for an existing client): manage it at the issuer`);
    }
    const { registrationClientUri } = registration;
    const seal = new RegistrationSeal(settings.initialAccessToken);
    let token: string;
    try {
      token = seal.open(registration.sealedToken, registration.keyId, clientId, registrationClientUri);
    } catch (error) {
      if (error instanceof SealUnreadable) throw new AdminError('REGISTRATION_TOKEN_UNREADABLE', error.message, error.altered ? replaceClient(client) : undefined);
      throw error;
    }
    const atIssuer: ClientRegistration = { registrationClientUri, registrationAccessToken: token };
    return { stored: registration, atIssuer, seal };
  }

  /** Only while the client's registration_client_uri is where the registration endpoint is now. */
  private async managingIssuer(settings: RegistrationSettings, client: TokenClientSummary, registration: ClientRegistration, limits: IssuerLimits): Promise<IssuerMetadata> {
    const metadata = await discoverIssuer(settings.issuer, limits);
    const foreign =
      metadata.registrationEndpoint === undefined
        ? `the issuer ${settings.issuer} no longer offers dynamic client registration (its discovery document has no registration_endpoint)`
        : foreignManagementUri(registration.registrationClientUri, metadata.registrationEndpoint);
    if (foreign !== undefined) {
      throw new AdminError(
        'REGISTRATION_TOKEN_UNREADABLE',
        `client ${client.clientId} cannot be managed from here: ${foreign}; its registration access token was not sent. Manage the client at the issuer by hand, or replace it`,
        replaceClient(client),
      );
    }
    return metadata;
  }

  /** The transaction refused the client: delete it at the issuer again, and say what happened on each side. */
  private async undoRegistration(registered: RegisteredClient, error: unknown, limits: IssuerLimits): Promise<Error> {
    let undone = `the client ${registered.clientId} registered at the issuer was deleted again`;
    try {
      await deleteClient(registered, limits);
    } catch (undo) {
      undone = `deleting client ${registered.clientId} at the issuer failed too (${(undo as Error).message}): delete it there by hand`;
    }
    if (error instanceof AdminError) return new AdminError(error.code, `${error.message}; ${undone}`, error.nextStep, error);
    return new Error(`storing the client failed (${(error as Error).message}); ${undone}`, { cause: error });
  }
}
