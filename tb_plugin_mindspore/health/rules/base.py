"""The rule registry: levels, :class:`Finding`, :class:`Rule` and the :func:`rule` decorator."""

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

INFO, WARN, ERROR = "info", "warn", "error"
LEVELS = (INFO, WARN, ERROR)
LEVEL_RANK = {INFO: 0, WARN: 1, ERROR: 2}


@dataclass
class Finding:
    """One finding. The first five fields are the stable JSON shape; the others are added to the JSON only when
    set: ``layers`` where it started (first layers), ``source`` "live" for an event recorded while training (with
    the ``action`` taken and the ``checkpoint`` saved), ``caused_by`` the finding this one follows from, and
    ``follow_ons`` the findings nested under this one (see ``health/causes.py``)."""

    rule: str
    level: str
    message: str
    tag: str
    steps: Tuple[int, int]
    layers: Tuple[str, ...] = ()
    source: str = ""
    action: str = ""
    checkpoint: Optional[str] = None
    caused_by: Optional[dict] = None
    follow_ons: List["Finding"] = field(default_factory=list)
    # What to do, kept apart from the facts until the report is built (``health/diagnosis.py`` may replace it with
    # advice that names the likely cause); ``compose`` appends it to the message.
    advice: str = ""
    causes: List[dict] = field(default_factory=list)   # [{"cause", "likely", "evidence"}], most likely first
    watch: bool = False     # a precursor: nothing went wrong yet, this usually comes before it (level info)

    def compose(self):
        """Appends the advice to the message (once) and does the same for the follow-ons."""
        if self.advice:
            self.message = "%s %s" % (self.message.rstrip(), self.advice)
            self.advice = ""
        for f in self.follow_ons:
            f.compose()
        return self

    def to_json(self):
        out = {"rule": self.rule, "level": self.level, "message": self.message, "tag": self.tag,
               "steps": [int(self.steps[0]), int(self.steps[1])]}
        if self.advice:
            out["message"] = "%s %s" % (self.message.rstrip(), self.advice)
        if self.causes:
            out["causes"] = [dict(c) for c in self.causes]
        if self.watch:
            out["watch"] = True
        if self.layers:
            out["layers"] = list(self.layers)
        if self.source:
            out["source"] = self.source
        if self.action and self.action != "none":
            out["action"] = self.action
        if self.checkpoint:
            out["checkpoint"] = self.checkpoint
        if self.caused_by:
            out["caused_by"] = dict(self.caused_by)
        if self.follow_ons:
            out["follow_ons"] = [f.to_json() for f in self.follow_ons]
        return out


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
