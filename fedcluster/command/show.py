"""`fedcluster show group=option`: an option's settings, each with its value in the composed config,
its type, the default its class declares and the values it allows, read from the same signature
the config's schema and checks come from (schema.py, rules.py). `fedcluster show` lists the
groups and their options; `fedcluster show group` one group's options with their descriptions; `fedcluster show
run` the run's own keys (run_keys.py), each with its value in the composed config, type, default, rule and help."""
import inspect
import sys
from pathlib import Path
from typing import List, Optional

from ..config.conf_dir import GROUPS
USAGE = ("usage: fedcluster show [run | group[=option]] [key=value ...]   e.g. fedcluster show algorithm=fedsoft, "
         "fedcluster show run +preset=clove/images")


def description(path: Path) -> str:
    """The leading comment of an option's yaml, as one paragraph."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(lines)


def type_name(annotation, default) -> str:
    from ..config.schema import config_type
    from ..rules import unwrap
    bare = unwrap(annotation)[0]
    if bare is inspect.Parameter.empty:
        return "any"
    kind = config_type(bare, None if default is inspect.Parameter.empty else default)
    text = kind.__name__ if isinstance(kind, type) else str(kind).replace("typing.", "")
    return text.replace("Any", "any")


def shown(raw, resolved) -> str:
    """A setting's value: an interpolation with what it resolves to in this config."""
    if isinstance(raw, dict):
        return "(a config node)"
    if isinstance(raw, str) and raw.startswith("${"):
        return f"{raw} = {resolved!r}"
    return repr(raw)


def settings_table(cls, node) -> List[List[str]]:
    from omegaconf import OmegaConf
    from ..config.schema import parameters, plain
    from ..rules import unwrap
    raw = OmegaConf.to_container(node, resolve=False)
    rows = [["setting", "value", "type", "class default", "allowed"]]
    for p in parameters(cls):
        if p.name not in raw:
            continue
        try:
            resolved = node[p.name]
        except Exception:   # noqa: BLE001 -- an interpolation this config cannot resolve
            resolved = "?"
        rules = unwrap(p.annotation)[1]
        default = "(required)" if p.default is inspect.Parameter.empty else repr(plain(p.default))
        rows.append([p.name, shown(raw[p.name], resolved), type_name(p.annotation, p.default), default,
                     "; ".join(r.text for r in rules) or "-", help_of(p.annotation)])
    if not any(row[-1] for row in rows[1:]):   # a signature without help: no empty column
        return [rows[0]] + [row[:-1] for row in rows[1:]]
    return [rows[0] + ["what it is"]] + [row[:-1] + [row[-1] or "-"] for row in rows[1:]]


def help_of(annotation) -> str:
    """A setting's `Help` text (rules.Help in its Annotated type), or ""."""
    from ..rules import Help
    import typing
    if typing.get_origin(annotation) is typing.Annotated:
        return " ".join(m.text for m in annotation.__metadata__ if isinstance(m, Help))
    return ""


def aligned(rows: List[List[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def checked_config(overrides: List[str], conf: Path):
    """The config a run with these overrides would compose, refused as the run would refuse it (same line)."""
    from ..config.composition import check_declared
    from ..config.store import compose_config
    from ..config.validate import validate
    cfg = compose_config(overrides, conf)
    validate(cfg)
    check_declared(cfg)
    return cfg


def run_keys_table(overrides: List[str], conf: Path) -> str:
    """`fedcluster show run [overrides]`: every run key as run_keys.py declares it, with its value in the config
    those overrides compose (a preset's or a data set's solver shows here)."""
    from ..run_keys import run_keys
    cfg = checked_config(overrides, conf)
    rows = [["key", "value", "type", "default", "allowed", "what it is"]]
    for key in run_keys():
        head, _, tail = key.key.partition(".")
        value = cfg[head][tail] if tail else cfg.get(head)
        rows.append([key.key, repr(value), type_name(key.annotation, key.default), repr(key.default),
                     "; ".join(r.text for r in key.rules) or "-",
                     key.help + (" (never changes results)" if key.volatile else "")])
    return "\n".join(["Run keys (fedcluster/run_keys.py); change one with <key>=<value>:", aligned(rows)])


def show(args: List[str], conf: Path) -> str:
    """The text `fedcluster show <args>` prints; a ValueError for bad arguments."""
    from omegaconf import OmegaConf
    from ..config.plugins import group_options, option_file
    if not args:
        lines = ["Config groups and their options (fedcluster show group=option for its settings):"]
        for group in GROUPS:
            lines.append(f"  {group:<10} {', '.join(group_options(group, conf))}")
        lines.append("The run's own keys (seed, rounds, train.lr, ...): fedcluster show run")
        return "\n".join(lines)
    first, overrides = args[0], args[1:]
    if first == "run":
        return run_keys_table(overrides, conf)
    group, _, option = first.partition("=")
    if group not in GROUPS:
        raise ValueError(f"{group!r} is not a config group; allowed: {list(GROUPS)}")
    options = group_options(group, conf)
    if not option:
        return "\n".join([f"{group} options (fedcluster show {group}=<option> for its settings):"] +
                         [f"  {o:<20} {description(option_file(group, o, conf))}" for o in options])
    if option not in options:
        raise ValueError(f"{group}={option} is not an option; allowed: {options}")
    cfg = checked_config([f"+{first}" if group == "logger" else first] + overrides, conf)
    node = cfg[group][option] if group == "logger" else cfg[group]
    values = OmegaConf.to_container(node, resolve=False)
    from hydra.utils import get_class
    cls = get_class(values["_target_"])
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")   # the class's own, not a base's
    lines = [f"{group}={option}: {description(option_file(group, option, conf))}",
             f"class {values['_target_']}" + f" (settings from the class's {'Settings record' if 'Settings' in cls.__dict__ else 'signature'})", ""]
    if doc:
        lines += ["  " + line for line in doc.split("\n\n")[0].splitlines()] + [""]
    lines.append(aligned(settings_table(cls, node)))
    nested = [k for k, v in values.items() if isinstance(v, dict) and "_target_" in v]
    for key in nested:
        inner = get_class(values[key]["_target_"])
        lines += ["", f"{group}.{key} ({values[key]['_target_']}):", aligned(settings_table(inner, node[key]))]
    lines += ["", "value: in the composed config, with the overrides given (${...}: taken from another setting). "
                  f"Change one with {group}.<setting>=<value>."]
    return "\n".join(lines)


def main(args: List[str], conf: Path) -> Optional[int]:
    from ..config.composition import refusal
    try:
        text = show(args, conf)
    except Exception as e:   # noqa: BLE001 -- a refusal in one line: the run's own, or bad arguments to show
        line = refusal(e, conf)
        if line is None and isinstance(e, ValueError):
            line = f"{e} ({USAGE})"
        if line is None:
            raise
        print(f"fedcluster: error: {line}", file=sys.stderr)
        return 2
    try:
        print(text, flush=True)
    except BrokenPipeError:   # `fedcluster show algorithm=ifca | head`: the reader has gone; not an error
        sys.stderr.close()
    return 0
