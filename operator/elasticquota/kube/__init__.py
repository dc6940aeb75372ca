"""Kubernetes adapters: the only package that talks to the API server (kubernetes_asyncio).

Each module wraps one kind of I/O (quotas, events, the leader lease) behind small typed functions,
maps API errors to retry decisions, and knows nothing about quota semantics.
"""
