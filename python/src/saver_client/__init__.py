"""A LangGraph checkpoint saver backed by the saver HTTP service.

from saver_client import HTTPSaver
graph = builder.compile(checkpointer=HTTPSaver("http://127.0.0.1:8080"))
"""

from saver_client._transport import RetryPolicy
from saver_client._version import __version__
from saver_client.errors import (
    BadResponseError,
    ConflictError,
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
from saver_client.saver import HTTPSaver

__all__ = [
    "BadResponseError",
    "ConflictError",
    "HTTPSaver",
    "InternalServerError",
    "InvalidRequestError",
    "NoRouteError",
    "NotFoundError",
    "RetryPolicy",
    "SaverConnectionError",
    "SaverError",
    "TooLargeError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "__version__",
]
