"""The rule registry: levels, :class:`Finding`, :class:`Rule` and the :func:`rule` decorator."""

from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

INFO, WARN, ERROR = "info", "warn", "error"
LEVELS = (INFO, WARN, ERROR)
LEVEL_RANK = {INFO: 0, WARN: 1, ERROR: 2}


@dataclass
class Finding:
    rule: str
    level: str
    message: str
    tag: str
    steps: Tuple[int, int]

    def to_json(self):
        return {"rule": self.rule, "level": self.level, "message": self.message, "tag": self.tag,
                "steps": [int(self.steps[0]), int(self.steps[1])]}


@dataclass(frozen=True)
class Rule:
    id: str
    level: str          # the most severe level the rule reports
    source: str         # where its method and thresholds come from
    summary: str
    defaults: Dict[str, object]
    fn: Callable

    def describe(self):
        return {"id": self.id, "level": self.level, "source": self.source, "summary": self.summary,
                "defaults": dict(self.defaults)}


RULES: List[Rule] = []


def rule(rule_id, level, source, summary, **defaults):
    """Registers ``fn`` as a rule. ``defaults`` are its thresholds; the user's configuration overrides them."""

    def register(fn):
        RULES.append(Rule(rule_id, level, source, summary, dict(defaults), fn))
        return fn

    return register
