/**
 * gRPC errors as the official clients decode them: a status code plus the `exception` trailer
 * and its keys (`stream-name`, `expected-version`, `actual-version`, `leader-endpoint-host` /
 * `-port`), and for BatchAppend a google.rpc.Status whose one Any detail names the error
 * (`event_store.client.WrongExpectedVersion`, `StreamDeleted`, `AccessDenied`, `Timeout`, ...).
 */
import { Code, ConnectError } from '@connectrpc/connect';

/** Bad input from a client (malformed UUID, missing field, out-of-range number): INVALID_ARGUMENT. */
export class GrpcInputError extends Error {
  readonly code = 'EDB_GRPC_BAD_INPUT';
}

function withTrailers(message: string, code: Code, trailers: Record<string, string>): ConnectError {
  return new ConnectError(message, code, new Headers(trailers));
}

export function accessDenied(): ConnectError {
  return withTrailers('Access Denied', Code.PermissionDenied, { exception: 'access-denied' });
}

export function badCredentials(): ConnectError {
  return new ConnectError('Bad credentials: the user name or password is wrong, or the user is disabled', Code.Unauthenticated);
}

export function streamDeleted(stream: string): ConnectError {
  return withTrailers(`Event stream '${stream}' is deleted.`, Code.FailedPrecondition, { exception: 'stream-deleted', 'stream-name': stream });
}

export function wrongExpectedVersion(stream: string, expectedVersion: number, actualVersion: number): ConnectError {
  return withTrailers(
    `Append failed due to WrongExpectedVersion. Stream: ${stream}, Expected version: ${expectedVersion}, Actual version: ${actualVersion}`,
    Code.FailedPrecondition,
    { exception: 'wrong-expected-version', 'stream-name': stream, 'expected-version': String(expectedVersion), 'actual-version': String(actualVersion) },
  );
}

export function notLeader(host: string, port: number): ConnectError {
  return withTrailers(`Leader info available: ${host}:${port}`, Code.NotFound, {
    exception: 'not-leader', 'leader-endpoint-host': host, 'leader-endpoint-port': String(port),
  });
}

export function maximumAppendSizeExceeded(maxAppendSizeBytes: number): ConnectError {
  return withTrailers(`Maximum Append Size of ${maxAppendSizeBytes} Exceeded.`, Code.InvalidArgument, {
    exception: 'maximum-append-size-exceeded', 'maximum-append-size': String(maxAppendSizeBytes),
  });
}

export function badInput(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** Maps what a handler threw: input errors to INVALID_ARGUMENT, ConnectErrors as they are. */
export function toConnectError(err: unknown): ConnectError | undefined {
  if (err instanceof ConnectError) return err;
  if (err instanceof GrpcInputError) return badInput(err.message);
  return undefined;
}
