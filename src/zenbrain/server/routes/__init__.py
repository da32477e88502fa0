"""The REST routes, one module per concern; each ``router(api)`` returns an ``APIRouter``."""
