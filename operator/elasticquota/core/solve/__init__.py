"""The solve: quotas, pods and nodes in, every quota's request, used and runtime out.

From the bottom up (import contract "Solve"):

- ``layout``: one tree packed into the flat arrays the kernel works on; ``results``: what a solve
  publishes (``QuotaResult``, ``Snapshot``); ``podindex``: pod -> quota and quota -> pods;
  ``nodetotals``: the nodes' allocatable sum; ``enginesettings``: the knobs of the computation.
- ``accounting``: which quota a pod belongs to and what it adds to that quota's own sums.
- ``totals``: what each tree's virtual root distributes.
- ``trees``: one tree's manager state; ``treeresults``: kernel output turned into results.
- ``placement``: pods placed in their quotas' sums; ``solvejob``: one tree's solve in three steps.
- ``rebuild``: a topology rebuild in three steps.
- ``engineview``: what the engine tells its readers (trees, results, snapshot, owners, problems).
- ``engine``: the ``QuotaEngine`` that holds it all together: events in, trees solved, rebuilds.
"""
