"""Issue 78: client-level differential privacy (privacy=client_dp, DP-FedAvg: McMahan et al., ICLR 2018). The
accountant's epsilon is what dp-accounting gives for the run's rate, noise and rounds; without noise or clipping a
private FedAvg is the plain one; the clipping and the noise are what the mechanism states; a client's update
enters one model's sum; methods it cannot protect refuse it in one line; privacy=none keeps every run's identity.
Runs composed as the command composes them."""
import json
import math
import subprocess
import sys

import pandas as pd
import pytest
import torch

from conftest import SMALL, make_cfg
from fedcluster.algorithms.base import RoundPlan
from fedcluster.algorithms.private_means import PrivateMeans
from fedcluster.errors import ConfigError
from fedcluster.privacy import ClientDP, Release
from fedcluster.run_records.identity import comparable, config_fingerprint
from fedcluster.runner import run

dp_accounting = pytest.importorskip("dp_accounting")

EQUAL = SMALL + ["partition.min_samples=30", "partition.max_samples=30", "checkpoint_every=0"]   # equal n_k


def finished(tmp_path, name, *overrides):
    summary = run(make_cfg(EQUAL + list(overrides)), tmp_path / name)
    return summary, pd.read_csv(tmp_path / name / "metrics.csv")


def recomputed_epsilon(rate, z, rounds, delta=1e-5):
    """dp-accounting's RDP accountant, composed round by round as a user would."""
    from dp_accounting.rdp import RdpAccountant
    accountant = RdpAccountant()
    for _ in range(rounds):
        gaussian = dp_accounting.GaussianDpEvent(z)
        accountant.compose(gaussian if rate >= 1 else dp_accounting.PoissonSampledDpEvent(rate, gaussian))
    return accountant.get_epsilon(delta)


def test_epsilon_is_the_accountants_for_the_runs_rate_noise_and_rounds(tmp_path):
    summary, metrics = finished(tmp_path, "dp", "algorithm=fedavg", "algorithm.client_fraction=0.5", "privacy=client_dp",
                                "privacy.noise_multiplier=1.0", "privacy.clip_norm=1.0")
    privacy = summary["privacy"]
    assert privacy["epsilon"] == pytest.approx(recomputed_epsilon(0.5, 1.0, 3), rel=1e-9)
    assert privacy["delta"] == 1e-5 and privacy["participation_rate"] == 0.5 and privacy["denominator"] == 6.0
    per_round = metrics[metrics["metric"] == "epsilon"].sort_values("round")
    assert list(per_round["round"]) == [0, 1, 2]
    assert list(per_round["value"]) == pytest.approx([recomputed_epsilon(0.5, 1.0, r) for r in (1, 2, 3)], rel=1e-9)
    assert privacy["not_covered"] == []   # FedAvg's clients send their update only
    from dp_accounting.pld import PLDAccountant
    pld = PLDAccountant()
    pld.compose(dp_accounting.PoissonSampledDpEvent(0.5, dp_accounting.GaussianDpEvent(1.0)), 3)
    assert privacy["epsilon_pld"] == pytest.approx(pld.get_epsilon(1e-5), rel=1e-9) and \
        privacy["epsilon_pld"] < privacy["epsilon"]   # PLD's bound is the tighter


def test_without_noise_or_clipping_a_private_fedavg_is_the_plain_one(tmp_path):
    """Every client every round, equal data sizes: the fixed denominator is the count and uniform weights are n_k's,
    so the private mean is the plain mean, up to the float rounding of start + mean(update)."""
    _, plain = finished(tmp_path, "plain", "algorithm=fedavg")
    summary, private = finished(tmp_path, "private", "algorithm=fedavg", "privacy=client_dp",
                                "privacy.noise_multiplier=0", "privacy.clip_norm=null")
    assert summary["privacy"]["epsilon"] == math.inf
    private = private[private["metric"] != "epsilon"].reset_index(drop=True)
    assert list(private.columns) == list(plain.columns) and len(private) == len(plain)
    keys = [c for c in plain.columns if c not in ("value", "run_id")]   # another config: another run_id
    assert (private[keys] == plain[keys]).all().all()
    assert private["value"].to_numpy() == pytest.approx(plain["value"].to_numpy(), rel=1e-4, abs=1e-6)


def test_clipping_and_the_fixed_denominator_by_hand():
    """Two clients of model 0 with updates of norm 5 and 0.5 (one of model 1, norm 2), clip 1, no noise, D = 2:
    model 0 moves by (u1 / 5 + u2) / 2, model 1 by (u3 / 2) / 2, model 2 (no client) not at all."""
    models = {"w": torch.tensor([[1.0, 1.0], [0.0, 0.0], [7.0, 7.0]])}
    start = {"w": models["w"][[0, 0, 1]]}
    trained = {"w": start["w"] + torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 2.0]])}
    got = {}
    fold = PrivateMeans(RoundPlan(torch.tensor([0, 1, 2]), start), torch.tensor([0, 0, 1]), models,
                        ClientDP(clip_norm=1.0, noise_multiplier=0.0), Release(1.0, 2.0), torch.Generator(), got.update)
    fold.add(slice(0, 2), {"w": trained["w"][:2]})   # two chunks, as a round folds them
    fold.add(slice(2, 3), {"w": trained["w"][2:]})
    fold.finish()
    assert sorted(got) == [0, 1, 2]
    assert torch.allclose(got[0]["w"], torch.tensor([[1 + (0.6 + 0.3) / 2, 1 + (0.8 + 0.4) / 2]]))
    assert torch.allclose(got[1]["w"], torch.tensor([[0.0, 0.5]]))
    assert torch.equal(got[2]["w"], models["w"][2:3])


def test_the_noise_has_the_stated_std_and_each_model_its_own():
    """std z S sqrt(c) / D on every coordinate of every model, independent across models."""
    mechanism = ClientDP(clip_norm=0.5, noise_multiplier=2.0)
    sums = {"w": torch.zeros(2, 200_000)}
    noised = mechanism.noised_means(sums, Release(1.0, 4.0, contributions=3), torch.Generator().manual_seed(0))["w"]
    expected = 2.0 * 0.5 * math.sqrt(3) / 4.0
    assert noised.std(1).tolist() == pytest.approx([expected, expected], rel=0.01)
    assert abs(float(torch.corrcoef(noised)[0, 1])) < 0.01


def test_a_clustered_release_noises_every_model_and_counts_its_clients_choice_as_not_covered(tmp_path):
    summary, metrics = finished(tmp_path, "ifca", "algorithm=ifca", "num_clusters=3", "privacy=client_dp")
    privacy = summary["privacy"]
    assert privacy["denominator"] == 12 / 3 and privacy["contributions_per_client"] == 1
    assert privacy["epsilon"] == pytest.approx(recomputed_epsilon(1.0, 1.0, 3), rel=1e-9)
    assert privacy["not_covered"][0] == "cluster id (sent by each client, unnoised)"
    fedsoft, _ = finished(tmp_path, "fedsoft", "algorithm=fedsoft", "algorithm.selection_size=6", "privacy=client_dp")
    assert fedsoft["privacy"]["contributions_per_client"] == 2 and fedsoft["privacy"]["denominator"] == 6.0
    assert fedsoft["privacy"]["not_covered"][0] == "importance weights (sent by each client, unnoised)"


def test_poisson_participation_varies_and_a_round_without_clients_releases_noise(tmp_path):
    summary, _ = finished(tmp_path, "few", "algorithm=ifca", "num_clusters=2", "algorithm.client_fraction=0.1",
                          "privacy=client_dp", "rounds=6")
    assert summary["status"] == "complete" and summary["privacy"]["participation_rate"] == 0.1
    counts = pd.read_csv(tmp_path / "few" / "participation.csv").groupby("round").size().reindex(range(6), fill_value=0)
    assert counts.nunique() > 1 or counts.iloc[0] != round(0.1 * 12)   # not the fixed-size sample of a plain run


@pytest.mark.parametrize("overrides,named", [
    (["algorithm=local"], "updates never leave the client"),
    (["algorithm=ifca_cam"], "not a mean of its clients' updates"),
    (["algorithm=ifca", "algorithm.update=eq6"], "update=eq6"),
    (["algorithm=fedsoft", "algorithm.replacement=true"], "replacement=true"),
    (["algorithm=fedavg", "privacy.clip_norm=null"], "privacy.clip_norm=null"),
])
def test_a_method_or_setting_it_cannot_protect_is_refused_before_anything_is_written(tmp_path, overrides, named):
    with pytest.raises(ConfigError, match=named) as refused:
        run(make_cfg(EQUAL + ["privacy=client_dp", *overrides]), tmp_path / "run")
    assert len(str(refused.value).splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_the_command_refuses_in_one_line_with_exit_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "fedcluster", "privacy=client_dp", "algorithm=local",
                          f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["fedcluster: error: privacy=client_dp is refused for algorithm=local: "
                                               "its updates never leave the client, so there is nothing for "
                                               "client-level DP to protect"]
    assert not (tmp_path / "run").exists()


def test_without_the_accountant_client_dp_is_refused_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "dp_accounting", None)   # import dp_accounting then raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'fedcluster\[privacy\]'"):
        ClientDP()


def test_privacy_none_keeps_every_runs_identity():
    cfg = make_cfg(SMALL)
    from omegaconf import OmegaConf
    config = OmegaConf.to_container(cfg, resolve=True)
    assert config["privacy"] == {"_target_": "fedcluster.privacy.NoPrivacy"}
    before = {k: v for k, v in config.items() if k != "privacy"}   # a config recorded before the group existed
    assert config_fingerprint(config) == config_fingerprint(before)
    private = OmegaConf.to_container(make_cfg(SMALL + ["privacy=client_dp"]), resolve=True)
    assert config_fingerprint(private) != config_fingerprint(config) and "privacy" in comparable(private)


def test_a_private_run_resumes_to_the_uninterrupted_metrics(tmp_path, monkeypatch):
    """The noise and the Poisson sample come from the round's own streams, epsilon from the round alone."""
    import fedcluster.runner as runner
    overrides = ["algorithm=clove", "num_clusters=2", "algorithm.client_fraction=0.5", "privacy=client_dp",
                 "checkpoint_every=1"]
    run(make_cfg(SMALL + overrides), tmp_path / "straight")
    original = runner.client_chunks

    class Died(Exception):
        pass

    def dies_in_round_3(t, *args, **kwargs):
        if t == 2:
            raise Died()
        return original(t, *args, **kwargs)
    monkeypatch.setattr(runner, "client_chunks", dies_in_round_3)
    with pytest.raises(Died):
        run(make_cfg(SMALL + overrides), tmp_path / "resumed")
    monkeypatch.setattr(runner, "client_chunks", original)
    summary = run(make_cfg(SMALL + overrides), tmp_path / "resumed")
    assert (tmp_path / "resumed" / "metrics.csv").read_bytes() == (tmp_path / "straight" / "metrics.csv").read_bytes()
    assert summary["privacy"] == json.loads((tmp_path / "straight" / "summary.json").read_text())["privacy"]


def test_the_calibrated_noise_spends_at_most_the_target():
    from fedcluster.privacy.accounting import epsilon
    from fedcluster.privacy.calibrate import main, noise_multiplier_for
    for target, rate in ((4.0, 0.1), (1.0, 1.0)):
        z = noise_multiplier_for(target, rate, 20)
        assert epsilon(rate, z, 1e-5, 20) <= target < epsilon(rate, z - 0.002, 1e-5, 20)
    assert main(["--epsilon", "0", "--rate", "0.1", "--rounds", "5"]) == 2


def test_the_privacy_page_lists_the_options_that_take_client_dp_and_the_accountants_results():
    import re
    from conftest import CONF, ROOT
    from fedcluster.assemble import make
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import accountants
    page = (ROOT / "docs" / "privacy.md").read_text()
    accepted = [f.stem for f in sorted((CONF / "algorithm").glob("*.yaml"))
                if make(make_cfg([f"algorithm={f.stem}", "num_clusters=2"]).algorithm).client_dp_refusal() is None]
    listed = re.search(r"that take `privacy=client_dp` at their defaults: (.*?) \(a test", page, re.S).group(1)
    assert re.findall(r"`(\w+)`", listed) == accepted
    assert accountants.markdown(ROOT / "docs" / "results" / "privacy" / "accountants.jsonl") in page


def test_a_command_after_the_accountant_was_imported_under_a_redirected_stderr_keeps_the_callers_stream(tmp_path):
    """absl (imported by dp-accounting) keeps the stderr of its import in a handler that Hydra's logging setup
    closes at the next command: a caller's stream must survive it (accounting.unbind_absl_stream)."""
    import contextlib
    import io
    import logging.config
    from absl import logging as absl_logging
    from fedcluster.privacy.accounting import require_accountant
    mine = io.StringIO()
    handler = absl_logging.get_absl_handler().python_handler
    kept = handler.stream
    try:
        handler.stream = mine                      # as if absl were first imported under this redirect
        with contextlib.redirect_stderr(io.StringIO()):
            require_accountant()                   # what a client_dp run calls first
            logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})   # as Hydra does
        assert not mine.closed
    finally:
        handler.stream = kept
