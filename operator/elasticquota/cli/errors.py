"""Errors the commands print as one line on stderr (kept free of the Kubernetes client, so that
importing the command line stays cheap)."""

from __future__ import annotations


class ClusterReadError(Exception):
    """The cluster could not be read; the message is one line."""
