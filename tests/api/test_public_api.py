"""The curated public namespace: pinned so that a change to it is deliberate."""

import zenbrain

EXPECTED = {
    "open_memory", "MemoryCoordinator", "Config", "RecallParams", "LayerParams", "Mechanisms", "ALL_MECHANISMS",
    "Clock", "SimulatedClock", "SystemClock", "Scope", "Layer", "Kind", "MemoryItem", "Edge", "HistoryEvent",
    "RecallHit", "RecallResult", "ScoreBreakdown", "Report", "ZenBrainError", "ValidationError", "ScopeError",
    "UnknownLayerError", "ConfigError", "NotFoundError", "StorageError", "ProviderError",
    "AsyncMemory", "open_async_memory", "ErasureReceipt", "DamagedStoreError", "ErasurePendingError",
    "StoreClosedError",
}


def test_exported_names_are_pinned():
    assert set(zenbrain.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(zenbrain, name)


def test_every_error_derives_from_the_root():
    for name in ("ValidationError", "ScopeError", "UnknownLayerError", "ConfigError", "NotFoundError", "StorageError",
                 "ProviderError", "DamagedStoreError", "ErasurePendingError", "StoreClosedError"):
        assert issubclass(getattr(zenbrain, name), zenbrain.ZenBrainError)


def test_registry_names_match_the_paper():
    assert len(zenbrain.ALL_MECHANISMS) == 25
    assert len(set(zenbrain.ALL_MECHANISMS)) == 25
