"""Hierarchical elastic quota for Kubernetes, compatible with Koordinator's ElasticQuota."""

__version__ = "0.2.0"
