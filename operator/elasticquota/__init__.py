"""Hierarchical elastic quota for Kubernetes, compatible with Koordinator's ElasticQuota."""

__version__ = "0.1.0"
