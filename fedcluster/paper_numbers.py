"""Numbers reported in the papers, for side-by-side tables. Matrices are as printed
(rows = test distributions, columns = the paper's raw center indices); the report matches
centers to distributions with the Hungarian method before showing them.

FedSoft: Ruan & Joe-Wong, AAAI 2022 (../shared/papers/fedsoft-aaai2022.txt). Its synthetic
experiments state sigma0 = 10, but the authors' code (datawrappers/lr.py) draws theta with
variance 10 (sigma0 = sqrt(10)); its local-model numbers (w-bar) are on training data."""
from dataclasses import dataclass
from typing import Optional, Tuple, Union


FEDSOFT_TABLE1_SYNTHETIC_MSE = {   # Table 1, synthetic: MSE of c_0, c_1 on theta_0, theta_1
    "mix_10_90": [[68.4, 29.5], [21.8, 58.6]],
    "mix_30_70": [[44.2, 49.6], [41.3, 36.3]],
    "linear": [[38.2, 59.1], [47.1, 27.8]],
    "random": [[42.2, 60.6], [42.7, 27.0]],
}

FEDSOFT_TABLE3_SYNTHETIC_MSE = [   # Table 3: 8 distributions, random partition
    [62.2, 62.7, 64.0, 63.2, 61.4, 57.6, 63.7, 61.9],
    [65.0, 67.8, 69.4, 65.8, 64.3, 67.1, 64.2, 64.5],
    [60.1, 59.9, 57.8, 58.6, 62.6, 63.2, 60.0, 59.9],
    [96.8, 95.4, 96.8, 98.8, 93.2, 93.8, 95.3, 96.8],
    [86.1, 89.8, 91.8, 87.3, 85.4, 86.6, 85.6, 84.9],
    [161.2, 160.3, 156.0, 160.0, 164.7, 167.3, 162.0, 163.6],
    [110.2, 106.7, 104.8, 109.0, 111.0, 107.8, 111.5, 110.1],
    [34.5, 33.8, 34.8, 33.9, 34.2, 34.1, 34.4, 35.0],
]

FEDSOFT_TABLE6_SIGMA0 = {   # Table 6: random partition; centers' MSE and local w-bar (on training data)
    1.0: {"centers": [[5.9, 4.2], [3.2, 4.6]], "local_train": 0.6},
    10.0: {"centers": [[42.2, 60.6], [42.7, 27.0]], "local_train": 4.96},
    50.0: {"centers": [[225.3, 89.9], [117.6, 89.9]], "local_train": 18.8},
    100.0: {"centers": [[782.4, 454.4], [432.8, 812.0]], "local_train": 78.3},
}

# Fed-CAM (Ma et al., ../shared/papers/cam-fedcam.txt), Tables 1-2: test accuracy and macro-F1 (%)
# on client-wise test sets, mean over seeds (the paper's ± std left out). Key: (K, method);
# FedAvg/FedProx are single models (K = 1). Ensembles report no std in the paper.
_CAM_METHODS = ["fedavg", "fedprox", "fedavg_plus", "fedprox_plus", "ifca", "ifca_cam", "fesem", "fesem_cam"]


def _cam(rows):
    """rows: {K: [(acc, f1) per method of that K block]} -> {(K, method): (acc, f1)}."""
    out = {}
    for K, values in rows.items():
        methods = _CAM_METHODS[:2] if K == 1 else _CAM_METHODS[2:]
        out.update({(K, m): v for m, v in zip(methods, values)})
    return out


FEDCAM_TABLES = {
    ("cam_table1", "fashion_mnist", "cluster_dirichlet"): _cam({
        1: [(86.08, 57.24), (86.32, 58.03)],
        5: [(87.61, 59.48), (87.94, 59.83), (84.60, 62.03), (93.33, 79.64), (94.64, 82.90), (95.13, 85.10)],
        10: [(89.42, 67.83), (89.55, 68.02), (82.10, 62.62), (95.42, 88.45), (95.73, 89.34), (96.19, 92.37)]}),
    ("cam_table1", "fashion_mnist", "cluster_nclass"): _cam({
        1: [(86.33, 46.09), (86.42, 45.86)],
        5: [(86.95, 65.61), (86.52, 65.73), (84.94, 66.50), (95.38, 77.56), (94.20, 77.07), (95.69, 78.82)],
        10: [(86.91, 63.01), (86.73, 63.42), (86.58, 66.22), (95.09, 82.98), (95.54, 84.43), (98.07, 92.43)]}),
    ("cam_table1", "cifar10", "cluster_dirichlet"): _cam({
        1: [(24.38, 11.69), (24.73, 11.28)],
        5: [(25.97, 12.16), (26.05, 12.53), (34.10, 22.12), (58.13, 28.09), (59.06, 32.33), (64.35, 38.33)],
        10: [(28.45, 13.79), (28.33, 13.64), (34.84, 22.76), (70.90, 40.03), (66.89, 38.35), (78.45, 49.50)]}),
    ("cam_table1", "cifar10", "cluster_nclass"): _cam({
        1: [(21.33, 9.00), (22.66, 9.23)],
        5: [(24.35, 9.06), (24.83, 9.31), (29.80, 17.90), (54.56, 27.27), (58.76, 35.75), (65.58, 38.63)],
        10: [(27.28, 9.81), (26.94, 9.64), (34.06, 18.70), (68.46, 41.45), (71.76, 49.72), (75.04, 55.90)]}),
    ("cam_table2", "fashion_mnist", "dirichlet"): _cam({
        1: [(85.90, 54.52), (86.03, 54.69)],
        5: [(86.12, 61.07), (86.39, 56.56), (90.13, 68.47), (93.72, 70.67), (91.51, 73.78), (94.74, 75.12)],
        10: [(86.81, 60.43), (86.24, 56.2), (91.04, 68.6), (95.70, 79.17), (93.3, 80.47), (95.25, 81.5)]}),
    ("cam_table2", "fashion_mnist", "nclass"): _cam({
        1: [(86.17, 44.88), (86.47, 44.89)],
        5: [(86.5, 45.39), (86.15, 45.43), (91.54, 72.30), (92.24, 70.24), (91.83, 71.05), (93.14, 76.98)],
        10: [(86.91, 47.12), (86.78, 42.83), (91.42, 72.29), (92.57, 76.31), (93.75, 79.39), (95.15, 86.16)]}),
    ("cam_table2", "cifar10", "dirichlet"): _cam({
        1: [(25.62, 11.38), (25.72, 11.14)],
        5: [(25.71, 12.45), (25.58, 12.43), (47.21, 22.67), (54.32, 23.48), (54.30, 24.78), (59.71, 40.45)],
        10: [(27.83, 13.65), (25.86, 12.84), (47.62, 23.36), (72.54, 42.86), (67.0, 31.69), (80.11, 59.19)]}),
    ("cam_table2", "cifar10", "nclass"): _cam({
        1: [(24.30, 8.56), (24.19, 8.69)],
        5: [(24.83, 8.74), (25.88, 8.55), (46.54, 17.78), (54.92, 25.20), (55.55, 32.80), (56.70, 34.52)],
        10: [(27.71, 9.65), (26.16, 9.94), (47.96, 17.88), (61.01, 31.63), (63.64, 42.97), (69.88, 49.5)]}),
}


# -- CLoVE (Tables 1, 2, 4, 5, 7-9), mean ± std over 3 seeds, columns MNIST, CIFAR-10, FMNIST.
# Only the methods fedcluster implements (FedAvg, Local-only, CFL, FeSEM, IFCA, CLoVE).
CLOVE_DATASETS = ("mnist", "cifar10", "fashion_mnist")
CLOVE_METHODS = ("fedavg", "local", "cfl", "fesem", "ifca", "clove")


def _clove(text):
    """'method: m±s m±s m±s' lines -> {(method, dataset): (mean, std)}; '-' = not reported."""
    out = {}
    for line in text.strip().splitlines():
        method, cells = line.split(":")
        for d, cell in zip(CLOVE_DATASETS, cells.split()):
            if cell != "-":
                mean, std = cell.split("±")
                out[(method.strip(), d)] = (float(mean), float(std))
    return out


CLOVE_ACCURACY = {   # Tables 1 and 7: test accuracy (%), each client's assigned model on its own test data
    "label_skew1": _clove("""fedavg: 87.4±0.9 34.0±3.6 64.7±1.2
local: 99.5±0.1 85.4±1.6 98.8±0.1
cfl: 82.5±21.8 87.4±0.4 65.8±22.4
fesem: 73.2±0.8 11.2±1.6 41.8±0.7
ifca: 99.1±0.5 85.7±6.5 97.8±1.9
clove: 99.8±0.0 90.5±0.1 99.1±0.0"""),
    "concept_shift": _clove("""fedavg: 52.4±0.3 63.1±1.7 49.1±0.1
local: 94.8±0.3 45.1±0.4 78.3±0.4
cfl: 97.5±0.2 35.7±3.2 83.7±0.5
fesem: 46.2±0.1 12.7±0.5 39.7±0.6
ifca: 80.0±0.2 52.7±4.7 67.0±6.2
clove: 97.6±0.1 58.4±0.6 84.3±0.2"""),
    "label_skew2": _clove("""fedavg: 76.4±0.3 47.7±4.0 55.2±1.6
local: 94.2±0.2 55.9±1.8 86.1±0.4
cfl: 97.3±0.3 62.1±0.4 87.2±1.2
fesem: 89.1±1.6 15.3±2.5 51.4±0.2
ifca: 96.8±0.2 63.4±3.4 89.4±1.3
clove: 97.1±0.3 66.8±2.3 90.1±0.3"""),
    "feature_skew": _clove("""fedavg: 90.0±0.6 52.4±2.5 76.5±0.3
local: 93.0±0.1 38.5±1.6 75.8±0.2
cfl: 95.1±0.2 61.6±5.1 77.8±3.5
fesem: 79.5±0.4 10.7±0.5 67.6±0.5
ifca: 95.9±2.0 50.8±7.0 83.5±0.3
clove: 97.7±0.1 57.1±1.8 85.1±0.2"""),
    "label_skew3": _clove("""fedavg: 99.0±0.0 84.1±0.5 88.8±0.3
local: 85.9±0.6 41.1±1.5 71.1±0.4
cfl: 97.9±0.1 61.2±0.6 84.3±1.2
fesem: 94.0±0.2 13.3±0.2 72.2±1.9
ifca: 94.2±0.2 57.3±1.9 80.6±1.0
clove: 94.2±0.2 56.9±0.5 79.5±0.5"""),
    "label_skew4": _clove("""fedavg: 98.5±0.1 60.7±0.8 85.9±0.2
local: 94.8±0.2 67.1±0.5 85.5±0.1
cfl: 97.8±0.1 71.3±1.1 88.2±0.4
fesem: 94.9±0.3 11.9±1.5 80.6±1.1
ifca: 98.0±0.1 64.3±0.9 89.4±0.2
clove: 97.8±0.2 72.6±0.3 89.9±0.1"""),
}

CLOVE_ARI = {   # Tables 2 and 8
    "label_skew1": _clove("""cfl: 0.71±0.20 1.00±0.00 0.86±0.20
fesem: 0.18±0.00 0.00±0.00 0.00±0.00
ifca: 0.83±0.12 0.91±0.13 0.92±0.12
clove: 1.00±0.00 1.00±0.00 1.00±0.00"""),
    "concept_shift": _clove("""cfl: 1.00±0.00 0.00±0.00 1.00±0.00
fesem: 0.00±0.00 0.00±0.00 0.00±0.00
ifca: 0.68±0.00 0.76±0.17 0.55±0.18
clove: 1.00±0.00 1.00±0.00 1.00±0.00"""),
    "label_skew2": _clove("""cfl: 0.00±0.00 0.72±0.00 0.57±0.00
fesem: 0.18±0.00 0.00±0.00 0.00±0.00
ifca: 0.83±0.12 0.81±0.13 0.92±0.12
clove: 1.00±0.00 1.00±0.00 1.00±0.00"""),
    "feature_skew": _clove("""cfl: 0.48±0.00 0.89±0.15 0.16±0.23
fesem: 0.00±0.00 0.00±0.00 0.00±0.00
ifca: 0.67±0.28 0.71±0.22 0.55±0.10
clove: 1.00±0.00 1.00±0.00 1.00±0.00"""),
    "label_skew3": _clove("""cfl: 0.00±0.00 0.77±0.18 0.00±0.00
fesem: 0.18±0.00 0.00±0.00 0.00±0.00
ifca: 0.92±0.12 0.69±0.08 0.65±0.15
clove: 1.00±0.00 1.00±0.00 1.00±0.00"""),
    "label_skew4": _clove("""cfl: 0.00±0.00 0.61±0.03 0.29±0.02
fesem: 0.12±0.00 0.00±0.00 0.11±0.02
ifca: 0.55±0.03 0.36±0.22 0.50±0.05
clove: 0.60±0.10 1.00±0.00 0.95±0.07"""),
}

# Tables 4 and 9, FMNIST column only: (% of final ARI reached in 10 rounds, first round with ARI >= 0.9).
# None: a dash in the paper (never reached). Where the extracted text drops dashes, the column
# was resolved from Table 2/8 (a setting whose final ARI is 0 cannot reach 0.9).
CLOVE_CONVERGENCE_FMNIST = {
    "label_skew1": {"cfl": (0.0, 28.3), "fesem": (0.0, None), "ifca": (91.7, 7.3), "clove": (100.0, 2.0)},
    "concept_shift": {"cfl": (0.0, 43.0), "fesem": (0.0, None), "ifca": (100.0, 2.0), "clove": (100.0, 2.0)},
    "label_skew2": {"cfl": (0.0, 25.3), "fesem": (0.0, None), "ifca": (100.0, 3.3), "clove": (100.0, 2.0)},
    "feature_skew": {"cfl": (0.0, 73.7), "fesem": (0.0, None), "ifca": (100.0, 3.3), "clove": (100.0, 2.0)},
    "label_skew3": {"cfl": (0.0, None), "fesem": (0.0, None), "ifca": (100.0, 3.3), "clove": (100.0, 2.0)},
    "label_skew4": {"cfl": (0.0, 22.0), "fesem": (100.0, 1.0), "ifca": (100.0, 2.0), "clove": (100.0, 2.0)},
}

CLOVE_UNSUPERVISED = {   # Table 5: test reconstruction loss (MSE)
    ("fedavg", "mnist"): 0.032, ("fedavg", "cifar10"): 0.026, ("fedavg", "fashion_mnist"): 0.030,
    ("local", "mnist"): 0.019, ("local", "cifar10"): 0.022, ("local", "fashion_mnist"): 0.170,
    ("ifca", "mnist"): 0.024, ("ifca", "cifar10"): 0.019, ("ifca", "fashion_mnist"): 0.020,
    ("clove", "mnist"): 0.014, ("clove", "cifar10"): 0.021, ("clove", "fashion_mnist"): 0.016,
}

# FedSoft Table 2 (EMNIST letters, lower vs upper case): accuracy (%) of the center best on each
# distribution (with its index) and w-bar, the mean local-model accuracy, which the authors' code
# measured on the clients' training data.
FEDSOFT_TABLE2_LETTERS = {
    "mix_10_90": {"fedsoft": ((70.3, 1), (74.6, 0), 90.9), "ifca": ((58.5, 0), (61.3, 1), 65.2),
                  "fedem": ((67.4, 1), (69.8, 1), 63.6)},
    "linear": {"fedsoft": ((71.8, 0), (74.1, 1), 86.5), "ifca": ((55.4, 0), (57.2, 0), 62.9),
               "fedem": ((65.9, 0), (69.0, 0), 62.4)},
}

# FedSoft Table 5 (letters, linear partition): accuracy (%) of c_0, c_1 on the lower / upper case
# test sets and w-bar (training data) for lambda in {0, 0.1, 1}.
FEDSOFT_TABLE5_LAMBDA = {
    0.0: {"centers": [[48.4, 50.1], [47.7, 47.5]], "local_train": 72.7},
    0.1: {"centers": [[71.8, 71.7], [73.9, 74.1]], "local_train": 86.5},
    1.0: {"centers": [[55.1, 55.2], [58.7, 58.6]], "local_train": 63.6},
}


# -- Protocols: the setting each paper table was measured in. The report puts a paper column
# beside ours as "paper" only where our runs match every key given here; otherwise the header
# says "paper (different protocol: rounds 100 vs ours 20)". None: the paper does not say.
@dataclass(frozen=True)
class Protocol:
    """A paper table's protocol keys. samples_per_client: training samples per client (an int,
    or (low, high) for sizes drawn uniformly from that range); training_pool "full": the whole
    training set is split among the clients (no fixed size per client); dataset: our
    dataset.name for the paper's data (only where the table's paper column is one data set)."""
    rounds: Optional[int] = None
    num_clients: Optional[int] = None
    samples_per_client: Optional[Union[int, Tuple[int, int]]] = None
    training_pool: Optional[str] = None
    dataset: Optional[str] = None


# FedSoft §5 ("we use N=100 clients, and the number of samples in each client n_k is chosen
# uniformly at random from 100 to 200"); App. C: synthetic training "lasts for 50 global epochs",
# letters "for 200 global epochs". Tables 1, 3 and 6 are synthetic; Tables 2 and 5 EMNIST letters.
FEDSOFT_SYNTHETIC_PROTOCOL = Protocol(rounds=50, num_clients=100, samples_per_client=(100, 200), dataset="synthetic")
FEDSOFT_LETTERS_PROTOCOL = Protocol(rounds=200, num_clients=100, samples_per_client=(100, 200), dataset="emnist")
# Fed-CAM §5: "Each dataset is split among 200 clients"; "100 global communication rounds,
# including 30 warm-up rounds if applicable" (the whole training set, no per-client size).
FEDCAM_PROTOCOL = Protocol(rounds=100, num_clients=200, training_pool="full")
# CLoVE §5 Training Settings: T = 100 rounds. Results: "the number of clients between 20 and
# 100 ... In most cases, the training data size per client is set to 500" (clients per table
# not given). App. C.1.2 (Tables 7-9, label skews 3 and 4): 5 clusters of 5 clients, 500
# samples each. Table 5 (unsupervised) gives neither clients nor sizes.
CLOVE_IMAGES_PROTOCOL = Protocol(rounds=100, samples_per_client=500)
CLOVE_LABEL_SKEWS_PROTOCOL = Protocol(rounds=100, num_clients=25, samples_per_client=500)
# Label skew 4: the paper gives 5 clients per cluster and a dominant class unique to each cluster;
# the authors' code (exp501 in utils/dataset_modifier.py, runs 1510/1520 of
# experiment_driver/experiment_list.csv) makes one cluster per class: 10 clusters, 50 clients.
CLOVE_LABEL_SKEW4_PROTOCOL = Protocol(rounds=100, num_clients=50, samples_per_client=500)
CLOVE_UNSUPERVISED_PROTOCOL = Protocol(rounds=100)

PROTOCOLS = {   # the report's table name -> the protocol of the paper numbers it shows
    "fedsoft_table1_synthetic": FEDSOFT_SYNTHETIC_PROTOCOL,
    "fedsoft_table3_synthetic": FEDSOFT_SYNTHETIC_PROTOCOL,
    "fedsoft_table6_sigma0": FEDSOFT_SYNTHETIC_PROTOCOL,
    "fedsoft_table2": FEDSOFT_LETTERS_PROTOCOL,
    "fedsoft_table5": FEDSOFT_LETTERS_PROTOCOL,
    "cam_table1": FEDCAM_PROTOCOL,
    "cam_table2": FEDCAM_PROTOCOL,
    "clove_images": CLOVE_IMAGES_PROTOCOL,
    "clove_label_skews": CLOVE_LABEL_SKEWS_PROTOCOL,
    "clove_unsupervised": CLOVE_UNSUPERVISED_PROTOCOL,
}
# The CLoVE accuracy/ARI table shows every mixing; label skews 3 and 4 come from App. C.1.2.
CLOVE_PROTOCOL_BY_MIXING = {"label_skew3": CLOVE_LABEL_SKEWS_PROTOCOL, "label_skew4": CLOVE_LABEL_SKEW4_PROTOCOL}
