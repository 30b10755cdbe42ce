"""The installed distribution's version, for `__version__` and the User-Agent."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("saver-client")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
