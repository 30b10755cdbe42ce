"""A LangGraph checkpoint saver and store backed by the saver HTTP service.

from saver_client import HTTPSaver, HTTPStore
graph = builder.compile(checkpointer=HTTPSaver("http://127.0.0.1:7878"),
                        store=HTTPStore("http://127.0.0.1:7878"))
"""

from saver_client._http import Timeout
from saver_client._transport import RetryPolicy
from saver_client._version import __version__
from saver_client.errors import (
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
)
from saver_client.ledger import (
    Claim,
    ClaimState,
    Idempotent,
    IdempotentCall,
    StoredFailure,
    derive_key,
)
from saver_client.saver import HTTPSaver
from saver_client.store import HTTPStore
from saver_client.tree import Branch, NodeStatus, ResumeContext, ThreadTree, TreeNode

__all__ = [
    "BadResponseError",
    "Branch",
    "Claim",
    "ClaimState",
    "ConflictError",
    "GoneError",
    "HTTPSaver",
    "HTTPStore",
    "Idempotent",
    "IdempotentCall",
    "IdempotentCallFailed",
    "IdempotencyError",
    "IdempotencyInProgress",
    "InternalServerError",
    "InvalidRequestError",
    "NoRouteError",
    "NodeStatus",
    "NotFoundError",
    "ResumeContext",
    "RetryPolicy",
    "SaverConnectionError",
    "SaverError",
    "StoredFailure",
    "ThreadTree",
    "Timeout",
    "TooLargeError",
    "TreeNode",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "__version__",
    "derive_key",
]
