"""Agent Server's custom checkpointer: the saver service, configured from the
environment (SAVER_URL, SAVER_API_KEY, SAVER_SCOPE)."""

from saver_client.agent_server import checkpointer

__all__ = ["checkpointer"]
