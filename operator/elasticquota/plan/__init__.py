"""``elastic-quota plan``: load manifests, compute what the operator would, render it."""
