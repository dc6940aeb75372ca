"""The parts of the cluster-scale benchmark (``bench_scale.py`` runs it; ``bench_list`` uses its
cluster and client)."""
