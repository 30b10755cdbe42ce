"""Agent Server's custom store: the saver service's Store (LangGraph's
long-term memory), configured from the environment (SAVER_URL,
SAVER_API_KEY) and from the store section of langgraph.json (index, ttl)."""

from saver_client.agent_server import store

__all__ = ["store"]
