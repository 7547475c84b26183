"""A setting inside a swept config group belongs to the jobs, not to the sweep's own config.

Hydra composes a multirun's config once before it sweeps, with each swept group at its default option
and every plain override applied to it: `-m algorithm=fedavg,ifca algorithm.client_fraction=0.5` stopped
there ("algorithm.client_fraction is not a setting; allowed at algorithm: ...", FedSoft's keys, the default
algorithm's), though every swept method has the key. Such an override is handed to the jobs as a sweep of
one value (`algorithm.client_fraction=choice(0.5)`), which that first composition skips as it skips every
sweep; each job gets the same overrides as before (`algorithm.client_fraction=0.5`), so the same directory
name. A job whose option lacks the key fails alone, in one line, as any job that cannot be composed does,
while the others go on."""
from typing import Iterable, List


def per_job(arguments: Iterable[str], groups: Iterable[str]) -> List[str]:
    """`arguments` with each plain `group.key=value` whose group is swept on the command line (`group=a,b`,
    `group=choice(...)`) written as `group.key=choice(value)`; every other argument as it was. A value
    with an interpolation (`${...}`), an addition (`+`), a deletion (`~`) or a package keeps its form."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    arguments, groups = list(arguments), set(groups)
    parser = OverridesParser.create()
    parsed = {}
    for i, argument in enumerate(arguments):
        if "=" not in argument or argument.startswith("-"):   # a flag, or a flag's value (--cfg job)
            continue
        try:
            parsed[i] = parser.parse_overrides([argument])[0]
        except HydraException:   # Hydra reports an unparsable argument itself
            return arguments
    swept = {o.key_or_group for o in parsed.values()
             if o.is_sweep_override() and o.key_or_group in groups and o.package is None}
    out = list(arguments)
    for i, o in parsed.items():
        group = o.key_or_group.split(".", 1)[0]
        if (group in swept and "." in o.key_or_group and not o.is_sweep_override() and o.package is None
                and not (o.is_add() or o.is_force_add() or o.is_delete() or o.is_hydra_override())):
            value = o.get_value_element_as_str()
            if "$" not in value:
                out[i] = f"{o.key_or_group}=choice({value})"
    return out
