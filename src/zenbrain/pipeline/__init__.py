"""The operations the MemoryCoordinator sequences, one module per concern.

Every operation is a function taking the ``Engine`` (store, embedder, chat model,
configuration, clock, random generator) and a ``Scope``; none of them knows the facade.
"""
