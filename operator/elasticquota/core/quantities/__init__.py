"""Kubernetes quantities and resource lists in the integer units the engine works in.

- ``quantity``: one quantity parsed exactly, converted to engine units and formatted back.
- ``resources``: resource lists (name -> engine units): parsing, arithmetic, the annotation format.
- ``podrequest``: a pod's effective request, as Kubernetes computes it from its containers.
"""
