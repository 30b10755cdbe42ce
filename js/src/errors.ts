/**
 * Errors thrown by the saver client.
 *
 * Every failed request surfaces as a `SaverError` carrying the service's error
 * code, its message, the HTTP status and the request id (the one to quote when
 * reading the service's log). Subclasses let callers catch one kind without
 * parsing codes.
 */

export interface SaverErrorFields {
  status?: number;
  requestId?: string;
}

/** A request to the saver service failed. */
export class SaverError extends Error {
  readonly code: string;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  /** The service's message, without code, status and request id. */
  readonly detail: string;

  constructor(code: string, message: string, fields: SaverErrorFields = {}) {
    const parts = [`${code}: ${message}`];
    if (fields.status !== undefined) parts.push(`status=${fields.status}`);
    if (fields.requestId) parts.push(`request_id=${fields.requestId}`);
    super(parts.join(" "));
    this.name = new.target.name;
    this.code = code;
    this.detail = message;
    this.status = fields.status;
    this.requestId = fields.requestId;
  }

}

/** 400 `invalid`: the request was malformed or a field was bad. */
export class InvalidRequestError extends SaverError {}
/** 401 `unauthorized`: no valid credentials. */
export class UnauthorizedError extends SaverError {}
/** 404 `not_found`: the checkpoint or thread does not exist. */
export class NotFoundError extends SaverError {}
/** 404/405 `no_route`: the URL or method is unknown (a wrong base URL, or an older service). */
export class NoRouteError extends SaverError {}
/** 409 `conflict`: a condition on stored state did not hold. */
export class ConflictError extends SaverError {}
/**
 * 410 `gone`: the checkpoint written to was deleted, and nothing was stored: a
 * late put whose parent, or putWrites whose checkpoint, a deleteThread,
 * deleteForRuns or prune "delete" removed (LangGraph issue 7206). A fresh run
 * on the thread (a config without checkpoint_id) is stored.
 */
export class GoneError extends SaverError {}
/** 413 `too_large`: a body or payload is over the service's limit. */
export class TooLargeError extends SaverError {}
/** 415 `unsupported_media_type`: the body was neither msgpack nor JSON. */
export class UnsupportedMediaTypeError extends SaverError {}
/** 5xx: the service failed; its log has details under the request id. */
export class InternalServerError extends SaverError {}

/** 503 `unavailable`: the backend is down or throttling; retried by the client. */
export class UnavailableError extends SaverError {
  /** Seconds the service asked to wait (`Retry-After`), if it said. */
  readonly retryAfter: number | undefined;

  constructor(code: string, message: string, fields: SaverErrorFields & { retryAfter?: number } = {}) {
    super(code, message, fields);
    this.retryAfter = fields.retryAfter;
  }
}

/** The service could not be reached, the connection broke, or the request timed out. */
export class SaverConnectionError extends SaverError {}

/** The service answered with something that does not follow the wire protocol. */
export class BadResponseError extends SaverError {}

/** An idempotent call could not run or return its stored result. */
export class IdempotencyError extends Error {
  readonly key: string;

  constructor(key: string, message: string) {
    super(`${message} (idempotency key ${JSON.stringify(key)})`);
    this.name = new.target.name;
    this.key = key;
  }
}

/** The call under this key failed for good earlier; it is not run again. */
export class IdempotentCallFailed extends IdempotencyError {
  /** The failure stored by the attempt that failed. */
  readonly failure: string;
  /** Claims the ledger granted on the key. */
  readonly attempt: number;

  constructor(key: string, failure: string, attempt = 0) {
    super(key, failure);
    this.failure = failure;
    this.attempt = attempt;
  }
}

/** Another caller still holds the key's lease and the wait timed out. */
export class IdempotencyInProgress extends IdempotencyError {
  /** When that lease ends, epoch milliseconds, if known. */
  readonly leaseExpiresAt: number | undefined;

  constructor(key: string, message: string, leaseExpiresAt?: number) {
    super(key, message);
    this.leaseExpiresAt = leaseExpiresAt;
  }
}

type SaverErrorClass = new (code: string, message: string, fields?: SaverErrorFields) => SaverError;

const BY_CODE: Record<string, SaverErrorClass> = {
  invalid: InvalidRequestError,
  unauthorized: UnauthorizedError,
  not_found: NotFoundError,
  no_route: NoRouteError,
  conflict: ConflictError,
  gone: GoneError,
  too_large: TooLargeError,
  unsupported_media_type: UnsupportedMediaTypeError,
  unavailable: UnavailableError,
  internal: InternalServerError,
};

// Used when the body carries no known code (a proxy's HTML error page, say).
// 404 maps to NoRouteError: only an explicit `not_found` from the service may
// be read as "this checkpoint does not exist".
const BY_STATUS: Record<number, SaverErrorClass> = {
  400: InvalidRequestError,
  401: UnauthorizedError,
  404: NoRouteError,
  405: NoRouteError,
  409: ConflictError,
  410: GoneError,
  413: TooLargeError,
  415: UnsupportedMediaTypeError,
  503: UnavailableError,
};

/** The error for an error response. */
export function errorFromResponse(
  status: number,
  code: string | undefined,
  message: string,
  fields: { requestId?: string; retryAfter?: number } = {},
): SaverError {
  const cls =
    (code !== undefined && Object.hasOwn(BY_CODE, code) ? BY_CODE[code] : undefined) ??
    BY_STATUS[status] ??
    (status >= 500 ? InternalServerError : SaverError);
  const c = code || `http_${status}`;
  if (cls === UnavailableError) {
    return new UnavailableError(c, message, { status, requestId: fields.requestId, retryAfter: fields.retryAfter });
  }
  return new cls(c, message, { status, requestId: fields.requestId });
}
