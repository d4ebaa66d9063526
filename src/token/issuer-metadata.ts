import { isSecureOrLoopbackUrl } from '../config.js';
import { discoveryUrls } from './issuer-documents.js';
import { IssuerRefused, IssuerUnreachable, issuerRequest, type IssuerLimits, ISSUER_LIMITS } from './issuer-http.js';

/** The endpoints of the issuer that registering a partner's client needs. */
export interface IssuerMetadata {
  readonly issuer: string;
  /** Where the partner requests tokens; part of the hand-over. */
  readonly tokenEndpoint: string;
  /** RFC 7591 §3; undefined when the issuer offers no dynamic registration. */
  readonly registrationEndpoint: string | undefined;
}

/** The issuer's document says something the service cannot trust or use. */
export class IssuerMetadataInvalid extends Error {
  override readonly name = 'IssuerMetadataInvalid';
}

function endpoint(document: Record<string, unknown>, name: string): string | undefined {
  const value = document[name];
  if (value === undefined) return undefined;
  if (!isSecureOrLoopbackUrl(value)) throw new IssuerMetadataInvalid(`the issuer's discovery document names a ${name} that is not an https:// URL (http:// only on loopback)`);
  return value as string;
}

/**
 * The issuer's authorization server metadata, read now (an issuer may move its endpoints). The
 * document must be the issuer's own (RFC 8414 §3.3: its `issuer` equals the one configured).
 */
export async function discoverIssuer(issuer: string, limits: IssuerLimits = ISSUER_LIMITS): Promise<IssuerMetadata> {
  let document: Record<string, unknown> | undefined;
  let refusals: string[] = [];
  for (const url of discoveryUrls(issuer)) {
    try {
      document = (await issuerRequest({ method: 'GET', url }, limits)).json;
      break;
    } catch (error) {
      if (!(error instanceof IssuerRefused)) throw error;
      refusals = [...refusals, `${url} answered ${error.message}`];
    }
  }
  if (document === undefined) {
    if (refusals.length > 0) throw new IssuerUnreachable(`the issuer ${issuer} publishes no discovery document: ${refusals.join('; ')}`);
    throw new IssuerUnreachable(`the issuer ${issuer}'s discovery document is empty`);
  }
  if (document['issuer'] !== issuer) {
    throw new IssuerMetadataInvalid(`the discovery document at ${issuer} names the issuer ${JSON.stringify(String(document['issuer']).slice(0, 200))}, not ${issuer}: check TOKEN_ISSUER`);
  }
  const tokenEndpoint = endpoint(document, 'token_endpoint');
  if (tokenEndpoint === undefined) throw new IssuerMetadataInvalid(`the issuer ${issuer}'s discovery document has no token_endpoint`);
  return { issuer, tokenEndpoint, registrationEndpoint: endpoint(document, 'registration_endpoint') };
}
