"""The what-if line of sync_workflows (executions/services/whatif_summary.py), read by
whoever runs a deploy: what it says for each mix of diverging, unchanged and unreplayable
executions."""

from __future__ import annotations

import pytest

from executions.services.whatif_summary import WhatIf

HEAD = "what-if over the latest 3 executions of version 1: "
BROKEN = "the new definition cannot be replayed against this history: boom"


@pytest.mark.parametrize(
    ("what_if", "line"),
    [
        (WhatIf(1, 0, ()), "what-if: no executions of version 1 to replay"),
        (WhatIf(1, 3, ()), f"{HEAD}none would diverge"),
        (
            WhatIf(1, 3, (("node b", 2),)),
            f"{HEAD}2 of 3 would diverge (2 at node b)",
        ),
        (
            WhatIf(1, 3, (), unreplayable=1, first_problem=BROKEN),
            f"{HEAD}none would diverge; 1 could not be replayed ({BROKEN})",
        ),
        (
            WhatIf(1, 3, (("node b", 1),), unreplayable=2, first_problem=BROKEN),
            f"{HEAD}1 of 3 would diverge (1 at node b); 2 could not be replayed ({BROKEN})",
        ),
        # Not one replayed: nothing is known of divergence, so none is claimed.
        (
            WhatIf(1, 3, (), unreplayable=3, first_problem=BROKEN),
            f"{HEAD}none could be replayed ({BROKEN})",
        ),
        (
            WhatIf(4, 1, (), unreplayable=1, first_problem=BROKEN),
            f"what-if over the latest 1 execution of version 4: none could be replayed ({BROKEN})",
        ),
    ],
)
def test_the_line_says_what_the_replays_found(what_if: WhatIf, line: str) -> None:
    assert str(what_if) == line
