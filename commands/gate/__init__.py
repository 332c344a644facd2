"""The write gate G_write (SSGM Eq. 6): ``decide`` a command against the governed state, ``evolve``
the state by the decision. Pure; see :mod:`.decide` for the order of the checks.

- :mod:`.state` — what the gate reads (``GateState``) and the outcomes;
- :mod:`.effects` — what a decision says (``Decision``, effects, shreds);
- :mod:`.decide` — the entry point and the checks every command passes;
- :mod:`.writes` — memory writes; :mod:`.forgetting` — forgets, lineage, legal holds;
  :mod:`.review` — quarantine review; :mod:`.governance` — registry, keys, policy, core facts, grants;
  :mod:`.tokens` — the gateways' bearer tokens;
- :mod:`.evolve` — the fold of decisions into state.
"""

from memwarden.commands.gate.decide import MAX_FUTURE_SKEW, decide
from memwarden.commands.gate.effects import (
    Decision,
    DeferredSet,
    Effect,
    Forgotten,
    GrantUpsert,
    HoldSet,
    MemoryCleared,
    MemoryFacts,
    PolicySet,
    PrincipalUpsert,
    ProtectionSet,
    QuarantineSet,
    TokenSet,
)
from memwarden.commands.gate.evolve import apply_effect, evolve
from memwarden.commands.gate.state import (
    ADMITTED,
    GATE_VERSION,
    ClaimState,
    DeferredForget,
    GateLimits,
    GateState,
    HoldState,
    MemoryState,
    Outcome,
    PriorDecision,
    QuarantineState,
)
from memwarden.commands.ledger import Position
from memwarden.commands.readmodel.payload import UNTRUSTED_TAG
from memwarden.commands.reasons import Reason

__all__ = [
    "ADMITTED", "ClaimState", "Decision", "DeferredForget", "DeferredSet", "Effect", "Forgotten", "GATE_VERSION",
    "GateLimits", "GateState", "GrantUpsert", "HoldSet", "HoldState", "MAX_FUTURE_SKEW", "MemoryCleared",
    "MemoryFacts", "MemoryState", "Outcome", "PolicySet", "Position", "PrincipalUpsert", "PriorDecision",
    "ProtectionSet", "QuarantineSet", "QuarantineState", "Reason", "TokenSet", "UNTRUSTED_TAG", "apply_effect",
    "decide", "evolve",
]
