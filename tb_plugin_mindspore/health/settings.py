"""The health rules' configuration from ``RULE.PARAM=VALUE`` settings: ``tb-mindspore check --set`` and
TensorBoard's ``--mindspore_health_set`` take the same text and give the same, validated configuration."""

from . import engine


def parse_overrides(settings, disabled=()):
    """``["rule.key=value", ...]`` and disabled rule ids -> engine configuration; raises ValueError."""
    config = {}
    for item in settings:
        name, sep, value = item.partition("=")
        rule_id, dot, key = name.strip().partition(".")
        if not sep or not dot or not rule_id or not key:
            raise ValueError("--set expects RULE.THRESHOLD=VALUE, got %r" % item)
        config.setdefault(rule_id, {})[key.strip()] = value.strip()
    for rule_id in disabled:
        config.setdefault(rule_id, {})["enabled"] = False
    return config


def config_from_settings(settings, disabled=()):
    """The validated engine configuration of ``RULE.PARAM=VALUE`` settings (``check --set``, TensorBoard's
    ``--mindspore_health_set``), or ``None`` when there are none; raises ValueError with a one-line reason."""
    if not settings and not disabled:
        return None
    config = parse_overrides(settings, disabled)
    engine.validate_config(config)
    return config
