import { ServerCredentials } from '@grpc/grpc-js';
import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import type { SecureContextOptions } from 'node:tls';
import type { GrpcTlsFiles } from '../config.js';
import type { Logger } from '../observe/logger.js';

/** A TLS file that cannot be used; its message names the setting and the file, on one line. */
class TlsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsFileError';
  }
}

type FileContents = { readonly cert: Buffer; readonly key: Buffer; readonly clientCa: Buffer | undefined };

/** Contents checked to belong together: the secure context to serve, and what the log says of it. */
type TlsMaterial = { readonly context: SecureContextOptions; readonly described: Record<string, string> };

function named(setting: string, path: string): string {
  return `${setting} (${path})`;
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? ((error as NodeJS.ErrnoException).code ?? error.message) : String(error);
  return text.split('\n')[0] ?? text;
}

function certificateIn(contents: Buffer, setting: string, path: string): X509Certificate {
  try {
    return new X509Certificate(contents);
  } catch (error) {
    throw new TlsFileError(`${named(setting, path)} holds no PEM certificate (${firstLine(error)})`);
  }
}

function materialOf(files: GrpcTlsFiles, contents: FileContents): TlsMaterial {
  const certificate = certificateIn(contents.cert, 'GRPC_TLS_CERT_FILE', files.certFile);
  let key: KeyObject;
  try {
    key = createPrivateKey(contents.key);
  } catch (error) {
    throw new TlsFileError(`${named('GRPC_TLS_KEY_FILE', files.keyFile)} holds no PEM private key (${firstLine(error)})`);
  }
  if (!certificate.checkPrivateKey(key)) {
    throw new TlsFileError(`${named('GRPC_TLS_KEY_FILE', files.keyFile)} is not the key of the certificate in ${named('GRPC_TLS_CERT_FILE', files.certFile)}`);
  }
  if (files.clientCaFile !== undefined && contents.clientCa !== undefined) {
    certificateIn(contents.clientCa, 'GRPC_TLS_CLIENT_CA_FILE', files.clientCaFile);
  }
  return {
    context: { cert: contents.cert, key: contents.key, ...(contents.clientCa === undefined ? {} : { ca: contents.clientCa }) },
    described: { subject: certificate.subject.replaceAll('\n', ', '), validTo: certificate.validTo, sha256: certificate.fingerprint256 },
  };
}

function unreadable(setting: string, path: string, error: unknown): TlsFileError {
  return new TlsFileError(`${named(setting, path)} cannot be read (${firstLine(error)})`);
}

/** The three files as `read` gives each: now (at start) or later (a Buffer's promise). */
function readEach<T>(files: GrpcTlsFiles, read: (setting: string, path: string) => T): [T, T, T | undefined] {
  return [
    read('GRPC_TLS_CERT_FILE', files.certFile),
    read('GRPC_TLS_KEY_FILE', files.keyFile),
    files.clientCaFile === undefined ? undefined : read('GRPC_TLS_CLIENT_CA_FILE', files.clientCaFile),
  ];
}

function readNow(files: GrpcTlsFiles): FileContents {
  const [cert, key, clientCa] = readEach(files, (setting, path) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw unreadable(setting, path, error);
    }
  });
  return { cert, key, clientCa };
}

async function readLater(files: GrpcTlsFiles): Promise<FileContents> {
  const reads = readEach(files, (setting, path) => readFile(path).catch((error: unknown) => Promise.reject(unreadable(setting, path, error))));
  const [cert, key, clientCa] = await Promise.all(reads);
  return { cert, key, clientCa };
}

function fingerprintOf(contents: FileContents): string {
  const hash = createHash('sha256').update(contents.cert).update('\0').update(contents.key);
  if (contents.clientCa !== undefined) hash.update('\0').update(contents.clientCa);
  return hash.digest('hex');
}

/** grpc-js hands a replaced secure context to its TLS server (setSecureContext), for new connections only. */
class ReplaceableServerCredentials extends ServerCredentials {
  replace(options: SecureContextOptions): void {
    this.updateSecureContextOptions(options);
  }

  _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}

/** Read now, then by path every checkIntervalMs as kubelet swaps links; a bad new set is logged once, not used. */
export function grpcTlsCredentials(
  files: GrpcTlsFiles,
  options: { readonly checkIntervalMs: number; readonly handshakeTimeoutMs: number; readonly logger: Logger },
): { readonly credentials: ServerCredentials; stop(): void } {
  const { logger } = options;
  const initialContents = readNow(files);
  const initial = materialOf(files, initialContents);
  const requireClientCertificate = files.clientCaFile !== undefined;
  const credentials = new ReplaceableServerCredentials(
    // A client without a certificate from the CA is refused in the handshake.
    { requestCert: requireClientCertificate, rejectUnauthorized: requireClientCertificate, handshakeTimeout: options.handshakeTimeoutMs },
    initial.context,
  );
  logger.info({ ...initial.described, clientCertificateRequired: requireClientCertificate }, 'gRPC port serves TLS');

  let served = fingerprintOf(initialContents);
  let rejected: string | undefined;
  let checking = false;
  const check = async (): Promise<void> => {
    if (checking) return;
    checking = true;
    try {
      const contents = await readLater(files);
      const fingerprint = fingerprintOf(contents);
      if (fingerprint === served || fingerprint === rejected) return;
      try {
        const material = materialOf(files, contents);
        credentials.replace(material.context);
        served = fingerprint;
        rejected = undefined;
        logger.info(material.described, 'gRPC TLS certificate reloaded: new connections get it');
      } catch (error) {
        rejected = fingerprint;
        logger.error({ err: error }, `gRPC TLS files changed but cannot be used; the certificate in use is kept: ${firstLine(error)}`);
      }
    } catch (error) {
      // A file missing for a moment, as while a Secret volume swaps its link: logged once, kept.
      const message = firstLine(error);
      if (rejected !== message) logger.error({ err: error }, `gRPC TLS files cannot be read; the certificate in use is kept: ${message}`);
      rejected = message;
    } finally {
      checking = false;
    }
  };
  const timer = setInterval(() => void check(), options.checkIntervalMs);
  timer.unref();
  return { credentials, stop: () => clearInterval(timer) };
}
