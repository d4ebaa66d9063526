import { ISSUER_ENVIRONMENT, loadIssuerConfig } from '../issuer/issuer-config.js';
import { flag, type CommandSpec } from './command.js';

export const ISSUER_COMMAND: CommandSpec = {
  name: 'issuer',
  summary:
    'run an OAuth 2.0 authorization server for the partner API: client credentials, RFC 9068 JWT access tokens for ISSUER_RESOURCE, ' +
    'client registration (RFC 7591/7592) with the initial access token, keys in the database (docs/tokens.md, "Running the issuer")',
  options: { 'show-registration-token': { type: 'boolean' } },
  rules: {
    '--show-registration-token':
      'print the registration token kept in the database again (trying out on loopback without ISSUER_REGISTRATION_TOKEN: it is printed at the first start only)',
  },
  environment: ISSUER_ENVIRONMENT,
  example:
    'DATABASE_URL=postgres://authz@db.internal/authz ISSUER_URL=https://auth.partner-api.example.com ' +
    'ISSUER_RESOURCE=https://partner-api.example.com ISSUER_REGISTRATION_TOKEN_FILE=/run/secrets/registration-token sitekey-authz issuer',
  run: async ({ config, env, logger }, line) => {
    const settings = loadIssuerConfig(env);
    // Loaded here so that the other commands do not pay for oidc-provider.
    const { runIssuer } = await import('../issuer/run-issuer.js');
    await runIssuer(config, settings, logger, { showRegistrationToken: flag(line, 'show-registration-token') });
    return undefined;
  },
};
