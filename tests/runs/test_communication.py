"""Issue 78: what crosses the wire, counted from what each method sends (algorithms/wire.py): FedAvg sends each
reporting client the model and gets the trained one back; IFCA and CLoVE send each the K cluster models; a client
that drops out adds nothing; Local-only sends nothing. Runs composed as the command composes them."""
import pandas as pd
import pytest
import torch

from conftest import SMALL, make_cfg
from fedcluster.runner import run

ROUNDS, CLIENTS = 3, 12


def model_bytes(cfg) -> int:
    """P x 4: the float32 parameters of the run's model, counted from the model the run builds."""
    from fedcluster.assemble import build
    fed = build(cfg)[1]
    return sum(v[0].numel() * v.element_size() for v in fed.init_models(1, "centers").values())


def finished(tmp_path, name, *overrides, base=SMALL):
    cfg = make_cfg(base + ["checkpoint_every=0", *overrides])
    summary = run(cfg, tmp_path / name)
    return cfg, summary, pd.read_csv(tmp_path / name / "communication.csv") \
        if (tmp_path / name / "communication.csv").exists() else None


@pytest.fixture(scope="module")
def fedavg(tmp_path_factory):
    """(cfg, summary, communication.csv) of one FedAvg run, every client reporting every round."""
    return finished(tmp_path_factory.mktemp("fedavg"), "fedavg", "algorithm=fedavg")


def test_fedavg_sends_the_model_down_and_up_to_every_client_every_round(fedavg):
    cfg, summary, table = fedavg
    size = model_bytes(cfg)
    assert summary["communication"] == {"bytes_down": ROUNDS * CLIENTS * size, "bytes_up": ROUNDS * CLIENTS * size,
                                        "clients": CLIENTS}
    assert set(table["what"]) == {"model"} and (table["clients"] == CLIENTS).all()
    last = table.groupby("direction")["cumulative_mb_per_client"].last()
    assert last["down"] == pytest.approx(ROUNDS * size / 2 ** 20)


@pytest.mark.parametrize("algorithm,extra", [("ifca", 0), ("clove", 1)])
def test_ifca_and_clove_send_k_times_fedavgs_models_down(tmp_path, fedavg, algorithm, extra):
    """K models to each client a round; CLoVE's server also tells each client its model (one number: `extra`)."""
    fedavg = fedavg[1]
    cfg, summary, table = finished(tmp_path, algorithm, f"algorithm={algorithm}", "num_clusters=3")
    K, number = 3, 4
    assert summary["communication"]["bytes_down"] == \
        K * fedavg["communication"]["bytes_down"] + extra * ROUNDS * CLIENTS * number
    models = table[table["what"] == f"{K} cluster models"]
    assert models["bytes"].sum() == K * fedavg["communication"]["bytes_down"]
    reported = {"ifca": "cluster id", "clove": "loss vector"}[algorithm]
    per_client = table[(table["what"] == reported) & (table["direction"] == "up")]
    assert (per_client["bytes"] == CLIENTS * number * (K if algorithm == "clove" else 1)).all()


def test_a_client_that_drops_out_adds_nothing(tmp_path):
    cfg, summary, table = finished(tmp_path, "dropout", "algorithm=fedavg", "algorithm.client_dropout=0.4")
    reported = pd.read_csv(tmp_path / "dropout" / "participation.csv").groupby("round").size()
    assert reported.sum() < ROUNDS * CLIENTS   # some client dropped out
    assert summary["communication"]["bytes_up"] == summary["communication"]["bytes_down"] == \
        reported.sum() * model_bytes(cfg)
    assert table.groupby("round")["clients"].max().tolist() == reported.tolist()


def test_local_only_sends_nothing(tmp_path):
    _, summary, table = finished(tmp_path, "local", "algorithm=local")
    assert summary["communication"] == {"bytes_down": 0, "bytes_up": 0, "clients": CLIENTS} and table is None


def test_fedsoft_sends_the_centers_to_every_client_every_tau_rounds(tmp_path):
    """FedSoft's Algorithm 1: rounds 0 and 2 (tau = 2) send the S centers to all clients and take back S
    importance weights from each; round 1 sends them to the selected clients only; every round the selected
    clients send back one model each."""
    S = 2
    cfg, summary, table = finished(tmp_path, "fedsoft", "algorithm=fedsoft", "algorithm.selection_size=6",
                                   "algorithm.tau=2", f"num_clusters={S}")
    size = model_bytes(cfg)
    rows = {(r["round"], r["direction"], r["what"]): r for r in table.to_dict("records")}
    for t in (0, 2):
        assert rows[(t, "down", f"{S} centers")]["clients"] == CLIENTS
        assert rows[(t, "down", f"{S} centers")]["bytes"] == CLIENTS * S * size
        assert rows[(t, "up", "importance weights")]["bytes"] == CLIENTS * S * 4
    selected = rows[(1, "up", "model")]["clients"]
    assert 6 <= selected <= min(CLIENTS, S * 6) and rows[(1, "up", "model")]["bytes"] == selected * size
    assert rows[(1, "down", f"{S} centers")]["bytes"] == selected * S * size
    assert (1, "up", "importance weights") not in rows


def test_fedproto_sends_prototypes_and_no_parameters(tmp_path, fmnist_root):
    from conftest import IMAGE_SKEW
    cfg, summary, table = finished(tmp_path, "fedproto", f"dataset.root={fmnist_root}", "algorithm=fedproto",
                                   base=IMAGE_SKEW)
    assert set(table["what"]) == {"global prototypes", "prototypes and counts"}
    up = table[table["direction"] == "up"]["bytes"].tolist()
    assert len(set(up)) == 1 and up[0] < model_bytes(cfg)   # far less than a model: C x feature size + C
    assert table[(table["round"] == 0) & (table["direction"] == "down")].empty   # no global prototypes yet


def test_ifca_cam_sends_fedavgs_model_in_warm_up_then_ifcas_messages_and_the_global_model(tmp_path, fedavg):
    """Fed-CAM Algorithm 1 with a one-round FedAvg warm-up: round 1 is FedAvg's exchange; rounds 2-3 send IFCA's K
    cluster models and take back the cluster id and theta_i, and send Theta_g down and theta_i^0 up."""
    K, number = 3, 4
    cfg, summary, table = finished(tmp_path, "ifca_cam", "algorithm=ifca_cam", "algorithm.warmup_rounds=1",
                                   f"num_clusters={K}")
    per_round = fedavg[1]["communication"]["bytes_down"] // ROUNDS   # one model to each client
    assert summary["communication"]["bytes_down"] == per_round + (ROUNDS - 1) * (K + 1) * per_round
    assert summary["communication"]["bytes_up"] == per_round + (ROUNDS - 1) * (2 * per_round + CLIENTS * number)
    assert set(table[table["round"] == 0]["what"]) == {"model"}
    assert set(table[table["round"] == 2]["what"]) == {f"{K} cluster models", "cluster id", "model", "global model"}


def test_pacfl_sends_each_clients_data_signature_once_before_training(tmp_path, fmnist_root):
    """Vahidian et al. Algorithm 1: in the first round every client uploads its signature, n_basis singular vectors
    (d = 784 pixels, float64 as computed) for each class it holds; then FedAvg's exchange within the clusters."""
    from conftest import IMAGE_SKEW
    cfg, summary, table = finished(tmp_path, "pacfl", f"dataset.root={fmnist_root}", "algorithm=pacfl",
                                   "algorithm.n_basis=2", base=IMAGE_SKEW)
    from fedcluster.assemble import build
    fed = build(cfg)[1]
    classes = [len(torch.unique(fed.data.train.y[k, :int(fed.data.train.n[k])])) for k in range(fed.num_clients)]
    signature = table[table["what"] == "data signature"]
    assert set(signature["round"]) == {0} and (signature["direction"] == "up").all()
    assert signature["bytes"].sum() == sum(784 * 2 * c * 8 for c in classes)
    assert signature["clients"].sum() == fed.num_clients
    size = model_bytes(cfg)
    models = table[table["what"] == "model"]
    assert (models["bytes"] == models["clients"] * size).all() and set(models["round"]) == set(range(cfg.rounds))


def test_fedpac_sends_the_model_centroids_and_statistics(tmp_path, fmnist_root):
    """Xu et al. Algorithm 1: the model each way; up, the client's class centroids with counts and its QP
    statistics (V and H: 1 + C x D numbers); down from the second round, the global centroids (C x D)."""
    from conftest import IMAGE_SKEW
    cfg, summary, table = finished(tmp_path, "fedpac", f"dataset.root={fmnist_root}", "algorithm=fedpac",
                                   base=IMAGE_SKEW)
    from fedcluster.assemble import build
    _, fed, alg, _ = build(cfg)
    C = fed.data.num_classes
    D = fed.model(fed.data.train.x[0, :1], with_features=True)[1].shape[1]   # the feature width the head reads
    rows = {(r["round"], r["direction"], r["what"]): r for r in table.to_dict("records")}
    reporting = rows[(0, "up", "model")]["clients"]
    assert rows[(0, "up", "class centroids and counts")]["bytes"] == reporting * (C * D + C) * 4
    assert rows[(0, "up", "feature statistics")]["bytes"] == reporting * (C * D + 1) * 4
    assert (0, "down", "global centroids") not in rows
    assert rows[(1, "down", "global centroids")]["bytes"] == rows[(1, "up", "model")]["clients"] * C * D * 4
    assert rows[(1, "down", "model")]["bytes"] == rows[(1, "down", "model")]["clients"] * model_bytes(cfg)


@pytest.mark.parametrize("algorithm,models_per_client", [("cfl", 1), ("fesem", 1), ("flexcfl", 1), ("perfedavg", 1),
                                                          ("fedala", 1), ("fedem", 2)])
def test_the_methods_that_exchange_models_send_each_trained_model_each_way(tmp_path, algorithm, models_per_client):
    """Their papers' algorithm boxes exchange models only: CFL (Sattler et al. 2021, Alg. 1: the cluster's model down,
    the client's update, a model's size, up), FeSEM (Xie et al. 2021: the assigned center down, the local model up),
    FlexCFL (Duan et al. 2022: its pre-training is its first round's exchange from w0), Per-FedAvg (Fallah et al.
    2020), FedALA (Zhang et al. 2023: the global model down, the trained model up; ALA runs on the client), FedEM
    (Marfoq et al. 2021, Alg. 1: each of the M components each way)."""
    cfg, summary, table = finished(tmp_path, algorithm, f"algorithm={algorithm}", "num_clusters=2")
    size = model_bytes(cfg)
    assert set(table["what"]) == {"model"}
    reported = pd.read_csv(tmp_path / algorithm / "participation.csv").groupby("round").size() \
        if (tmp_path / algorithm / "participation.csv").exists() else pd.Series([CLIENTS] * ROUNDS)
    for direction in ("down", "up"):
        rows = table[table["direction"] == direction]
        assert (rows["bytes"] == rows["clients"] * size).all()
        assert rows["clients"].tolist() == [models_per_client * n for n in reported.tolist()]
