import * as x509 from '@peculiar/x509';
import { KeyObject, webcrypto } from 'node:crypto';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

/** A certificate and its key, both PEM. */
export interface Issued {
  readonly cert: string;
  readonly key: string;
}

export interface CertificateAuthority extends Issued {
  /** A certificate for localhost and 127.0.0.1, for a server or a client. */
  issue(commonName: string, usage: 'server' | 'client'): Promise<Issued>;
}

function keyPem(key: webcrypto.CryptoKey): string {
  return KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** A CA made for one test run: node's crypto signs no X.509 by itself, so @peculiar/x509 does. */
export async function certificateAuthority(name: string): Promise<CertificateAuthority> {
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    signingAlgorithm: ALGORITHM,
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + DAY_MS),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const issue = async (commonName: string, usage: 'server' | 'client'): Promise<Issued> => {
    const leafKeys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
    const cert = await x509.X509CertificateGenerator.create({
      subject: `CN=${commonName}`,
      issuer: caCert.subject,
      publicKey: leafKeys.publicKey,
      signingKey: keys.privateKey,
      signingAlgorithm: ALGORITHM,
      notBefore: new Date(Date.now() - DAY_MS),
      notAfter: new Date(Date.now() + DAY_MS),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth]),
        new x509.SubjectAlternativeNameExtension([
          { type: 'dns', value: 'localhost' },
          { type: 'ip', value: '127.0.0.1' },
        ]),
        await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    return { cert: cert.toString('pem'), key: keyPem(leafKeys.privateKey) };
  };
  return { cert: caCert.toString('pem'), key: keyPem(keys.privateKey), issue };
}
