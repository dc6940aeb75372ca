"""The demo (``make run`` = ``python -m eqdev.demo -f examples/``): the operator live on a local
control plane with a story of reclaim and revocation.

- :mod:`.command`: start the control plane and the operator, tell the story, show the live view;
- :mod:`.story`: which objects come first and which later, and what the narrator says;
- :mod:`.view`: the screen (the trees and a pane of recent events);
- :mod:`.operator`: the operator with the node simulation plugged in (``python -m
  eqdev.demo.operator``, the same flags as ``elastic-quota run``).
"""
