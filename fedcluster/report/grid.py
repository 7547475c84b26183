"""The leaderboard's grid: the jobs its presets (conf/preset/leaderboard/*.yaml) sweep, read from their sweeper
parameters, so the page can list every cell not yet run (report/leaderboard.py) without a plan kept by hand.
A preset is one part of the grid; Hydra's launchers run it (fedcluster -m +preset=leaderboard/<part>)."""
import itertools
from typing import Dict, Iterator, List

from omegaconf import OmegaConf

from ..config.conf_dir import config_dir

FOLDER = "leaderboard"


def preset_files() -> List:
    return sorted((config_dir() / "preset" / FOLDER).glob("*.yaml"))


PRESETS = tuple(f"{FOLDER}/{p.stem}" for p in preset_files())


def preset_params(path) -> Dict[str, List[str]]:
    """{key: values} of one preset's hydra.sweeper.params (a comma-separated sweep or one value)."""
    params = OmegaConf.to_container(OmegaConf.load(path)).get("hydra", {}).get("sweeper", {}).get("params", {})
    return {k: [v.strip() for v in str(value).split(",")] for k, value in params.items()}


def planned_jobs() -> Iterator[dict]:
    """Every job of the grid: {"preset": leaderboard/<part>, then each sweeper parameter's value (dataset,
    partition, algorithm, seed and the part's own settings)}, preset by preset, in the sweep's order."""
    for path in preset_files():
        params = preset_params(path)
        keys = list(params)
        for values in itertools.product(*(params[k] for k in keys)):
            yield {"preset": f"{FOLDER}/{path.stem}", **dict(zip(keys, values))}
