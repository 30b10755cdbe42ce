/**
 * saver-client: a LangGraph.js checkpoint saver and store backed by the saver HTTP service.
 *
 *     import { HTTPSaver, HTTPStore } from "saver-client";
 *     const url = "http://127.0.0.1:7878";
 *     const graph = builder.compile({ checkpointer: new HTTPSaver(url), store: new HTTPStore(url) });
 */

export { API_KEY_ENV, HTTPSaver, type HTTPSaverOptions, metadataToWire, type PruneStrategy, type ResumeContextOptions, type Scope, SCOPE_KEY, URL_ENV } from "./saver.js";
export {
  BadResponseError,
  ConflictError,
  GoneError,
  IdempotencyError,
  IdempotencyInProgress,
  IdempotentCallFailed,
  InternalServerError,
  InvalidRequestError,
  NoRouteError,
  NotFoundError,
  SaverConnectionError,
  SaverError,
  TooLargeError,
  UnauthorizedError,
  UnavailableError,
  UnsupportedMediaTypeError,
} from "./errors.js";
export {
  type Claim,
  type ClaimOptions,
  type ClaimState,
  DEFAULT_WAIT_TIMEOUT_MS,
  deriveKey,
  type Idempotent,
  type IdempotentCall,
  type IdempotentOptions,
  type StoredFailure,
} from "./ledger.js";
export { DEFAULT_RETRY, type Logger, type RetryPolicy } from "./transport.js";
export { type Branch, type NodeStatus, ResumeContext, type ResumeStep, ThreadTree, type TreeNode } from "./tree.js";
export { VERSION } from "./version.js";
export {
  HTTPStore,
  type HTTPStoreOptions,
  STORE_BATCH_PATH,
  type StoreGetOperation,
  type StorePutOperation,
  type StoreSearchOperation,
  type StoreTTLConfig,
} from "./store.js";
