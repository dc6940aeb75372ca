"""Pure, synchronous domain core: quantities, models, quota trees, the engine, admission and
revocation.

Nothing here performs I/O or imports kopf, kubernetes_asyncio or prometheus_client (enforced by
import-linter); the operator and the CLI are thin layers over it.
"""
