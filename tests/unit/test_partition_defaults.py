"""A partition built from the composed config, as the CLI builds it, is the same object as the
class built directly with only what its option file sets: every default is declared once, in a
signature, so the schema Hydra composes carries it (issue "Structure, step 2", item 2: LabelSkew1
used to set `min_cluster_fraction` 0.0 in its body while the CLI ran with the base's 0.1)."""
import pytest
import yaml
from hydra.utils import get_class
from omegaconf import OmegaConf

from fedcluster.assemble import make   # what the CLI's build() calls

from conftest import CONF, make_cfg

OPTIONS = sorted(p.stem for p in (CONF / "partition").glob("*.yaml"))


@pytest.mark.parametrize("option", OPTIONS)
def test_a_partition_from_the_config_is_the_class_with_its_defaults(option):
    needs_k = option in ("cluster_dirichlet", "cluster_nclass")   # no K of their own (Fed-CAM sweeps 5 and 10)
    cfg = make_cfg([f"partition={option}"] + (["num_clusters=5"] if needs_k else []))
    node = OmegaConf.to_container(cfg.partition, resolve=True)
    own = yaml.safe_load((CONF / "partition" / f"{option}.yaml").read_text()) or {}
    explicit = {k: node[k] for k in own if k not in ("defaults", "name", "_target_")}
    if "num_clusters" in node:   # the run's K, by interpolation
        explicit["num_clusters"] = node["num_clusters"]
    from_config = make(cfg.partition)
    direct = get_class(node["_target_"])(**explicit)
    assert vars(from_config) == vars(direct), option


def test_the_cluster_skews_declare_the_defaults_they_use():
    from fedcluster.partitions import LabelSkew1
    cfg = make_cfg(["partition=label_skew1"])
    assert cfg.partition.min_cluster_fraction == 0.0 and cfg.partition.min_cluster_test_fraction == 0.0
    assert cfg.partition.min_samples == 1
    built = make(cfg.partition)
    assert isinstance(built, LabelSkew1) and built.min_samples == 1
