"""Adapters for agent frameworks, each behind its own optional extra:

* ``zenbrain.integrations.langgraph`` -- :class:`ZenbrainStore`, a LangGraph ``BaseStore``
  (``pip install "zenbrain[langgraph]"``), which LangMem's tools use unchanged
  (``pip install "zenbrain[langmem]"``, with ``user_label=1``);
* ``zenbrain.integrations.openai_agents`` -- :class:`ZenbrainSession`, a session for the
  OpenAI Agents SDK (``pip install "zenbrain[openai-agents]"``).

Import the module you need; this package imports no framework by itself.
"""
