"""Label values that name another quota (the parent, the tree) must be valid label values.

The mutating webhook runs before the API server validates the object's metadata: a parent label
such as ``dépt`` reached the rules, which looked the name up and answered "parent not exist". The
real problem is the value itself, which the API server would refuse anyway: it is reported as
such, naming the quota, the label and the rule, and the rules that would look the name up are not
run on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from elasticquota.core import keys
from elasticquota.core.validation.facts import Violation

#: Kubernetes' rule for a label value (apimachinery's ``IsValidLabelValue``).
LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MAX_LABEL_VALUE: Final = 63
LABEL_VALUE_RULE: Final = (
    f"a valid label value is at most {MAX_LABEL_VALUE} characters of ASCII letters, digits, "
    "'-', '_' and '.', beginning and ending with a letter or digit"
)
#: The labels whose value is the name of another quota or of a tree.
NAME_LABELS: Final = (*keys.LABEL_PARENT_ALIASES, keys.LABEL_TREE_ID)


def is_label_value(value: str) -> bool:
    return len(value) <= MAX_LABEL_VALUE and LABEL_VALUE.match(value) is not None


def label_value_violations(quota: str, labels: Mapping[str, Any]) -> list[Violation]:
    """A violation for each name label of ``quota`` whose value is not a valid label value."""
    found = []
    for key in NAME_LABELS:
        value = labels.get(key)
        if value is None or is_label_value(str(value)):
            continue
        found.append(
            Violation(
                "label-value",
                f"quota {quota}: label {key} has an invalid value {str(value)!r}: "
                f"{LABEL_VALUE_RULE}",
            )
        )
    return found
