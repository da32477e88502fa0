"""Servers over the library: a REST API (``rest``) and an MCP server (``mcp_server``).

Both are thin adapters: every operation is a ``MemoryCoordinator`` call, validated and
scoped by the library itself; they add transport, authentication and error mapping only.
Both come with the core install (FastAPI, uvicorn and the MCP SDK are core dependencies).
"""
