"""The edge: raw Kubernetes objects parsed and validated into the core's typed models."""
