"""The names the fault seam (`Database.faults`) is called with, in one place.

A multi-step write passes each of its steps through the seam (`engine.fault`, or
`Database.faults` outside a transaction); a test's hook can fail there, or kill the
process (tests/process/test_kill_phases.py, one case per `Step`: a kill at any step must
leave no state a user can see, and the janitor reclaims what was half-built).

A `Window` is not a step of a write but the moment between a write's read and its
write, where race tests hold one writer while another goes ahead.
"""

from __future__ import annotations

from enum import StrEnum


class Step(StrEnum):
    # A branch or a fork (`services.history.branching`): its rows are copied, its transcript
    # seeded, then it is made active. A send on an edited draft first promotes it,
    # then seeds and activates it the same way.
    COPY = "copy"
    SEED = "seed"
    ACTIVATE = "activate"
    PROMOTE = "promote"
    # A send on a working draft: the draft is a branch now (committed), its turn not
    # opened yet (`services.turns.opening.open_after`).
    BRANCHED = "branched"
    # A checkout (`services.history`, `services.history.heads`).
    VALIDATE = "validate"
    LEASE = "lease"
    DETECT = "detect"
    RESTORE = "restore"
    HEAD = "head"
    PUBLISH = "publish"
    # An import (`services.transfer.importing`): rows, transcripts, activation.
    IMPORT_ROWS = "import_rows"
    IMPORT_SEED = "import_seed"
    IMPORT_ACTIVATE = "import_activate"
    # A send that creates its conversation (`services.turns.opening`): the thread is
    # inserted, then the turn opened, in one transaction.
    OPEN = "open"
    # A turn's closing write (`services.turns`), and the sweep that closes the turn of
    # a process that died (`services.turns.sweep`).
    CLOSE = "close"
    SWEEP = "sweep"
    # A merge or a pick (`services.merge`), one transaction: the plan checked under the
    # family lock, the node's record written, the live workspace changed, the head moved
    # onto the node with its actions logged.
    MERGE_PLAN = "merge_plan"
    MERGE_NODE = "merge_node"
    MERGE_APPLY = "merge_apply"
    MERGE_HEAD = "merge_head"
    # After a merge committed: the merged document's search vector computed in a
    # transaction of its own (`services.search.vectors`, PostgreSQL).
    MERGE_VECTORS = "merge_vectors"


class Window(StrEnum):
    # Opening a turn on PostgreSQL without the family lock (`services.turns.opening`).
    UNLOCKED_READ = "unlocked-read"
    # Appending a todo or a preference (`services.workspace.items`).
    APPEND_READ = "append-read"


# What the seam is called with.
Seam = Step | Window
